"""The renderers mount and the modules that belong to it."""
