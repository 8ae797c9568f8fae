"""Management commands of the request log."""
