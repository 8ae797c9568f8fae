"""WSGI entry point (gunicorn ``tmsite.wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")
application = get_wsgi_application()
