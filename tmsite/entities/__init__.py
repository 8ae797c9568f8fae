"""The autopsy records as Django models, their loaders and admin."""
