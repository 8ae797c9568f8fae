"""The id → module → tests table in docs/ is current, and every id is built and checked."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

from tests.spec_marks import SCRIPT


def _table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spec_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_in_docs_is_current() -> None:
    table = _table()
    if not table.features_path().is_file() and os.environ.get("CI") == "true":
        pytest.fail(f"the specification is missing at {table.features_path()} (set TM_FEATURES)")
    assert table.TABLE.read_text(encoding="utf-8") == table.render(), (
        "docs/spec-ids.md is not current: run python scripts/spec_table.py"
    )


def test_every_built_id_names_its_modules_and_tests() -> None:
    table = _table()
    ids, modules, tests = table.specified_ids(), table.module_ids(), table.test_ids()
    built = [spec_id for spec_id in ids if spec_id not in table.NOT_BUILT]
    assert [spec_id for spec_id in built if not modules.get(spec_id)] == []
    assert [spec_id for spec_id in built if not tests.get(spec_id)] == []
    named = set(modules) | set(tests)
    assert sorted(named - set(ids)) == [], "ids named in code or tests that the spec lacks"


def test_a_stale_table_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table()
    current = table.render()
    copy = tmp_path / "spec-ids.md"
    copy.write_text(current, encoding="utf-8")
    monkeypatch.setattr(table, "TABLE", copy)
    assert table.main(["--check"]) == 0
    copy.write_text(current.replace("| `FS` |", "| `FS` | (edited) |", 1), encoding="utf-8")
    assert table.main(["--check"]) == 1
