"""Management commands of the entity records."""
