"""A configuration mistake stops ``manage.py check`` with a stable id, never a failed read later."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from tmsite.mounts import registry
from tmsite.mounts.http.mount import check_sites
from tmsite.mounts.registry import check_enabled_mounts

pytestmark = [
    pytest.mark.django_db,  # the trail checks read their index
    pytest.mark.spec("NS1", "HTTP"),
]


def _check_output() -> str:
    with pytest.raises(SystemCheckError) as refused:
        call_command("check")
    return str(refused.value)


def test_the_shipped_settings_pass_every_check() -> None:
    call_command("check")  # raises SystemCheckError on any error


def test_the_trail_checks_run_at_start_up_through_the_process_namespace(
    settings: Any, tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parents[2]
    checkout = tmp_path / "checkout"
    shutil.copytree(root / "docs", checkout / "docs")
    (checkout / "notes" / "trails").mkdir(parents=True)
    (checkout / "notes" / "trails" / "broken.json").write_text("{not json")
    step = {"uri": "tm://tinymachines/fs/docs/nowhere.md", "note": "a typo"}
    trail = {"title": "Lost", "description": "One step.", "steps": [step]}
    (checkout / "notes" / "trails" / "lost.json").write_text(json.dumps(trail))
    settings.TM_CHECKOUT = checkout
    settings.TM_HOST = "tinymachines"
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_MOUNTS = ["fs", "trail"]
    registry.reset()
    out = io.StringIO()
    try:
        call_command("check", stdout=out, stderr=out)
    finally:
        registry.reset()
    said = out.getvalue()
    assert "(tm.W020) notes/trails/broken.json does not parse" in said
    assert "(tm.W021) trail lost, step 1 (tm://tinymachines/fs/docs/nowhere.md) does not " in said
    assert "resolve: not-found" in said


def test_a_mount_name_that_is_no_mount_stops_start_up(settings: Any) -> None:
    settings.TM_MOUNTS = ["fs", "ftp"]
    output = _check_output()
    assert "(tm.E001) TM_MOUNTS names 'ftp', which is not a mount" in output
    assert "HINT: the mounts are entity, fs, git" in output


@pytest.mark.parametrize("value", ["fs", ["fs", 3]])
def test_mounts_that_are_not_a_list_of_names(settings: Any, value: Any) -> None:
    settings.TM_MOUNTS = value
    [message] = check_enabled_mounts()
    assert (message.id, message.msg) == ("tm.E001", "TM_MOUNTS must be a list of mount names")


@pytest.mark.parametrize(
    ("sites", "front_door", "says"),
    [
        ({"Tinymachines.AI": {"kind": "self"}}, None, "'Tinymachines.AI' is not a lower-case"),
        ({"a.example": {"kind": "proxy"}}, None, "kind is self or static, not 'proxy'"),
        ({"a.example": {"scheme": "ftp"}}, None, "scheme is http or https, not 'ftp'"),
        ({"a.example": "self"}, None, "TM_SITES['a.example'] must be a mapping"),
        (["a.example"], None, "TM_SITES must map site names"),
        ({"a.example": {"front_door": "http://10.0.0.8:80"}}, None, "not '10.0.0.8'"),
        ({"a.example": {"front_door": "http://127.0.0.1:99999"}}, None, "out of range"),
        ({"a.example": {}}, "http://user@127.0.0.1:8000", "scheme://address:port only"),
        ({"a.example": {}}, "file:///srv/site", "an http:// or https:// URL"),
    ],
)
def test_a_site_the_mount_cannot_read_stops_start_up(
    settings: Any, sites: Any, front_door: str | None, says: str
) -> None:
    settings.TM_SITES = sites
    if front_door is not None:
        settings.TM_FRONT_DOOR = front_door
    [message] = check_sites()
    assert message.id == "tm.E020"
    assert says in message.msg
    assert f"(tm.E020) {message.msg}" in _check_output()
