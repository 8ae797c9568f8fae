"""``manage.py tm_load_records``."""
