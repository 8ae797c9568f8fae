"""Management commands of the tmsite application."""
