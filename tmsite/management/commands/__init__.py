"""``python manage.py mcp_stdio`` and other commands."""
