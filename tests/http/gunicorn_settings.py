"""Settings for a real gunicorn serving this project to itself (the deadlock test).

The site's front door is the gunicorn's own address (``TM_TEST_PORT``): every page read by the
http mount is a request to the same worker pool that is answering the read.
"""

import os

from tmsite.settings import *  # noqa: F403
from tmsite.settings import ALLOWED_HOSTS

PORT = os.environ["TM_TEST_PORT"]
TM_SITES = {"tinymachines.ai": {"kind": "self", "front_door": f"http://127.0.0.1:{PORT}"}}
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "tinymachines.ai"]
TM_MOUNTS = ["fs", "http"]
TM_HTTP_DEADLINE = float(os.environ.get("TM_TEST_DEADLINE", "5"))
if "TM_TEST_SELF_FETCHES" in os.environ:
    TM_HTTP_SELF_FETCHES = int(os.environ["TM_TEST_SELF_FETCHES"])
