"""WSGI entry point (gunicorn ``tmsite.wsgi``): Django's handler with the whole ``MIDDLEWARE``.

The MCP endpoint is served here by its django-ninja route (``tmsite.mcp.endpoint``), which
hands the request's method, headers and body to the function the ASGI application calls.
"""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tmsite.settings")

application = get_wsgi_application()
