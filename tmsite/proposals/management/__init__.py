"""Management commands of proposals."""
