"""``manage.py tm_servers``."""
