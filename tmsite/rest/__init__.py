"""The REST surface: its routes and its wire table."""
