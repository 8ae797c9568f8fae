"""An admin change form's fields as a browser would post them back unchanged."""

from __future__ import annotations

import re

from django.test import Client


def change_form(client: Client, url: str) -> dict[str, str]:
    """The change form's inputs as the browser would post them (hidden management forms too)."""
    html = client.get(url).content.decode()
    data = {}
    for tag in re.findall(r"<input[^>]*>", html):
        name = re.search(r'name="([^"]+)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        if name and 'type="submit"' not in tag:
            data[name.group(1)] = value.group(1) if value else ""
    for name, value in re.findall(
        r'<textarea[^>]*name="([^"]+)"[^>]*>\s*(.*?)</textarea>', html, re.S
    ):
        data[name] = value
    for name, block in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', html, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', block)
        data[name] = chosen.group(1) if chosen else ""
    return data
