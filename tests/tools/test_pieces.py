"""The pieces record: the shipped file, the load errors, and licensing assembled from it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tmsite.operations.pieces import (
    Piece,
    PiecesError,
    clear_cache,
    licensing,
    load_pieces,
    load_record,
)

pytestmark = pytest.mark.spec("TL4", "TL6")

SHIPPED = Path(settings.BASE_DIR) / "data" / "pieces.json"


def piece_data(key: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "key": key,
        "project": "6502",
        "name": f"the {key}",
        "what": f"What {key} is.",
        "source": "https://github.com/tinymachines/6502",
        "ships_as": "a website",
        "code_licence": "MIT",
        "data_terms": "CC BY-NC-SA 3.0",
        "embeds_die_data": True,
        "public_url": f"https://{key}.example.org",
    }
    data.update(changes)
    return data


def write(tmp_path: Path, pieces: list[dict[str, Any]], name: str = "pieces.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"note": "test record", "pieces": pieces}), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_cache()


# --- the shipped record -------------------------------------------------------------------------


def test_shipped_record_loads_the_six_pieces_in_order() -> None:
    pieces = load_pieces(SHIPPED)
    assert [p.key for p in pieces] == [
        "halfphi",
        "explorer",
        "chip-api",
        "halfwave",
        "console",
        "registry",
    ]
    assert all(isinstance(p, Piece) for p in pieces)
    assert load_record(SHIPPED).note


def test_shipped_record_says_why_exactly_the_unhosted_pieces_are_unhosted() -> None:
    pieces = load_pieces(SHIPPED)
    for piece in pieces:
        assert (piece.public_url is None) == (piece.not_hosted_because is not None), piece.key
    assert sum(p.public_url is not None for p in pieces) == 4
    assert {p.key for p in pieces if p.public_url is None} == {"halfphi", "registry"}


def test_shipped_record_uses_the_settings_path() -> None:
    assert Path(settings.TM_PIECES_FILE).resolve() == SHIPPED.resolve()


# --- errors name the file and the field ---------------------------------------------------------


def test_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.json"
    with pytest.raises(PiecesError, match=r"nowhere\.json") as caught:
        load_pieces(path)
    assert "does not exist" in str(caught.value)


def test_malformed_json_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"note": "x",\n "pieces": [,]}', encoding="utf-8")
    with pytest.raises(PiecesError) as caught:
        load_pieces(path)
    message = str(caught.value)
    assert str(path) in message
    assert "line 2" in message


def test_wrong_field_names_the_piece_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a"), piece_data("b", public_url=42)])
    with pytest.raises(PiecesError) as caught:
        load_pieces(path)
    message = str(caught.value)
    assert str(path) in message
    assert "pieces[1] (key 'b').public_url" in message


def test_missing_field_is_named(tmp_path: Path) -> None:
    data = piece_data("a")
    del data["code_licence"]
    path = write(tmp_path, [data])
    with pytest.raises(PiecesError, match=r"pieces\[0\] \(key 'a'\)\.code_licence"):
        load_pieces(path)


def test_unknown_field_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a", licence="MIT")])
    with pytest.raises(PiecesError, match=r"pieces\[0\] \(key 'a'\)\.licence"):
        load_pieces(path)


def test_url_with_credentials_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a", public_url="https://u:p@a.example.org")])
    with pytest.raises(PiecesError, match="public_url: must not carry a user name"):
        load_pieces(path)


def test_duplicate_key_names_both_places(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a"), piece_data("b"), piece_data("a")])
    with pytest.raises(PiecesError) as caught:
        load_pieces(path)
    message = str(caught.value)
    assert str(path) in message
    assert "pieces[2].key: duplicate key 'a' (first at pieces[0])" in message


def test_duplicate_json_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    path.write_text('{"note": "x", "note": "y", "pieces": []}', encoding="utf-8")
    with pytest.raises(PiecesError, match=r"twice\.json: the name 'note' appears twice"):
        load_pieces(path)


def test_unhosted_piece_must_say_why(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a", public_url=None)])
    with pytest.raises(PiecesError) as caught:
        load_pieces(path)
    message = str(caught.value)
    assert str(path) in message
    assert "pieces[0] (key 'a'): not_hosted_because: required when public_url is null" in message


def test_hosted_piece_must_not_say_why_not(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a", not_hosted_because="a crate")])
    with pytest.raises(PiecesError, match="not_hosted_because: present although public_url"):
        load_pieces(path)


def test_empty_record_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, [])
    with pytest.raises(PiecesError, match=r"pieces\.json: pieces: "):
        load_pieces(path)


# --- the mtime cache ----------------------------------------------------------------------------


def test_load_is_cached_until_the_file_changes(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a")])
    first = load_record(path)
    assert load_record(path) is first
    path.write_text(
        json.dumps({"note": "edited", "pieces": [piece_data("a"), piece_data("b")]}),
        encoding="utf-8",
    )
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = load_record(path)
    assert second is not first
    assert [p.key for p in second.pieces] == ["a", "b"]


def test_load_pieces_returns_a_fresh_list(tmp_path: Path) -> None:
    path = write(tmp_path, [piece_data("a")])
    pieces = load_pieces(path)
    pieces.clear()
    assert len(load_pieces(path)) == 1


# --- licensing, assembled from the pieces -------------------------------------------------------


def test_licensing_per_piece_equals_the_pieces() -> None:
    pieces = load_pieces(SHIPPED)
    answer = licensing(pieces)
    assert answer["per_piece"] == [
        {"key": p.key, "code_licence": p.code_licence, "data_terms": p.data_terms} for p in pieces
    ]


def test_licensing_groups_come_from_the_pieces() -> None:
    pieces = load_pieces(SHIPPED)
    answer = licensing(pieces)
    assert {g["terms"] for g in answer["code_licences"]} == {p.code_licence for p in pieces}
    assert {g["terms"] for g in answer["data_terms"]} == {p.data_terms for p in pieces}
    grouped = sorted(key for g in answer["data_terms"] for key in g["pieces"])
    assert grouped == sorted(p.key for p in pieces)
    assert [c["key"] for c in answer["clean_pieces"]] == ["halfphi"]
    assert [r["reaches"] for r in answer["what_the_terms_reach"]] == [
        item for p in pieces for item in p.terms_reach
    ]
    assert answer["read_before_publishing"]
    assert {d["subject"] for d in answer["decisions"]} == {"coins"}


def test_licensing_follows_a_changed_record(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        [
            piece_data("a", code_licence="Apache-2.0", terms_reach=["every frame"]),
            piece_data(
                "b",
                embeds_die_data=False,
                data_terms="none",
                public_url=None,
                not_hosted_because="a library",
            ),
        ],
    )
    answer = licensing(load_pieces(path))
    assert [g["terms"] for g in answer["code_licences"]] == ["Apache-2.0", "MIT"]
    assert "Apache-2.0" in answer["summary"]
    assert "every frame" in answer["summary"]
    assert answer["clean_pieces"][0]["key"] == "b"
    assert answer["read_before_publishing"] == []
    json.dumps(answer)
