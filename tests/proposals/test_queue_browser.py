"""The queue in a real headless Chromium: a proposal's HTML is shown as text, never run.

Skipped by name where Playwright or Chromium is missing (``tests/explorer``'s ``page``).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.proposals.conftest import BASE, maintainer, propose
from tmsite.proposals.models import Proposal

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.spec("PROP3")]

SCRIPT = "<script>window.ran = 1; alert('x')</script><img src=x onerror=\"window.ran = 2\">"


def test_a_proposals_html_is_shown_as_text_in_the_queue(
    box: Any, live_server: Any, page: Any
) -> None:
    result = propose(kind="address", uri=f"{BASE}/fs/docs/missing.md", expected=SCRIPT)
    assert not result["isError"], result
    proposal = Proposal.objects.get()
    client = Client()
    client.force_login(maintainer())
    cookie = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies(
        [{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
    )
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{live_server.url}/admin/tm_proposals/proposal/{proposal.pk}/change/")
    page.wait_for_selector("pre.tm-diff")
    assert SCRIPT in page.locator("pre.tm-diff").inner_text()
    assert page.evaluate("window.ran") is None
    assert dialogs == []
    assert page.locator("img[src=x]").count() == 0
