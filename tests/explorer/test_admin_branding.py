"""The admin in a real browser: branded with the site's name on the login page, in every
page's header and title, its "View site" link going to the site, and each app under a heading
a reader knows (django-otp's TOTP devices under "Second factor (TOTP)", not ``OTP_TOTP``).

Spec: OP4.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.explorer.conftest import shot

pytestmark = [pytest.mark.slow, pytest.mark.spec("OP4")]

PASSWORD = "a-long-enough-password-1"


def test_the_admin_is_branded_and_its_headings_read(
    transactional_db: None, page: Any, live_server: Any
) -> None:
    get_user_model().objects.create_superuser("keeper", "keeper@example.org", PASSWORD)
    page.goto(live_server.url + "/admin/login/")
    assert page.inner_text("#site-name") == "tinymachines admin"
    assert page.title().endswith("| tinymachines admin")
    page.fill("#id_username", "keeper")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("input[type=submit]")
    page.goto(live_server.url + "/admin/")
    assert page.inner_text("#site-name") == "tinymachines admin"
    assert page.title() == "Maintaining tinymachines | tinymachines admin"
    assert page.inner_text("#content h1") == "Maintaining tinymachines"
    assert page.locator("#user-tools a", has_text="View site").get_attribute("href") == "/"
    captions = [c.strip() for c in page.locator("#content-main caption").all_inner_texts()]
    assert "SECOND FACTOR (TOTP)" in [c.upper() for c in captions]
    assert not [c for c in captions if "_" in c], captions
    shot(page, "12-admin-index")
    page.goto(live_server.url + "/admin/otp_totp/")
    assert page.inner_text("#content h1") == "Second factor (TOTP) administration"
