"""Parts that keep text whole, and refusals that offer only addresses that read.

One checkout, also a repository built with dulwich, read through both mounts that cut byte
ranges themselves (``fs`` now, ``git`` at its commit): a ``.po``-like file of two-byte
characters, one of ASCII exactly past the cap, one that is not UTF-8, a binary one. A range of
text answers whole characters (ranges split at any byte join back to the file, no U+FFFD), the
cap is inclusive, a raw range is the bytes as asked, and a ``too-large`` refusal's templates
each read.

Spec: ANY3, NS4, NS6.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitstore.builder import Builder
from tmsite.core.errors import TooLarge
from tmsite.core.parts import NOT_UTF8, RANGE_META, READ_CAP
from tmsite.mounts import registry
from tmsite.mounts.namespace import Namespace

pytestmark = pytest.mark.spec("ANY3", "NS4", "NS6")

HOST = "tinymachines"
#: Two-byte characters, lines of them: a byte split falls inside one every other byte.
PO = "".join(f'msgid {i}\nmsgstr "{"é" * 997}"\n' for i in range(160)).encode()
#: Past the cap, with a two-byte character across byte READ_CAP.
AT_CAP = b"a" * (READ_CAP - 1) + "é".encode() + b"b" * 100
ASCII = b"x" * 99 + b"\n" + b"y" * READ_CAP
LATIN1 = ("caf\xe9 " * 70_000).encode("latin-1")
BINARY = bytes(range(256)) * 1100
FILES = {
    "docs/fr.po": PO,
    "docs/at-cap.txt": AT_CAP,
    "docs/ascii.txt": ASCII,
    "docs/latin1.txt": LATIN1,
    "docs/big.bin": BINARY,
}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parts") / "checkout"
    builder = Builder.init(str(root))
    sha = builder.commit("files", dict(FILES), when=0)
    builder.set_ref("refs/heads/main", sha)
    builder.repo.refs.set_symbolic_ref(b"HEAD", b"refs/heads/main")
    builder.repo.close()
    for path, content in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
    return root


@pytest.fixture
def ns(checkout: Path, settings: Any) -> Iterator[Namespace]:
    settings.TM_HOST = HOST
    settings.TM_CHECKOUT = checkout
    settings.TM_FS_ROOTS = ["docs"]
    settings.TM_MOUNTS = ["fs", "git"]
    settings.TM_CHECKOUT_REPO = "tmsite"
    settings.TM_GIT_REPOS = {}
    settings.TM_GIT_DEFAULT_REFS = {}
    settings.TM_IMPORTS_FILE = None
    registry.reset()
    yield registry.namespace()
    registry.reset()


BASES = [f"tm://{HOST}/fs/docs/", f"tm://{HOST}/git/tmsite/docs/"]


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("step", [200_000, 100_001, 262_144])
def test_ranges_split_at_any_byte_join_back_to_the_text(
    ns: Namespace, base: str, step: int
) -> None:
    parts = []
    for start in range(0, len(PO), step):
        read = ns.read(f"{base}fr.po?range={start}-{start + step}")
        assert isinstance(read.body, str)
        parts.append(read.body)
    joined = "".join(parts)
    assert "\ufffd" not in joined
    assert joined == PO.decode()


@pytest.mark.parametrize("base", BASES)
def test_a_character_cut_is_said_and_the_answer_names_the_bytes_given(
    ns: Namespace, base: str
) -> None:
    # 'msgid 0\n' and 'msgstr "' take bytes 0-15; the é's run from 16, two bytes each
    read = ns.read(f"{base}fr.po?range=17-27")
    assert read.body == "ééééé"  # the é cut at 17 starts it, the one cut at 27 is the next's
    assert read.uri == f"{base}fr.po?range=16-26"
    said = read.meta[RANGE_META]  # type: ignore[index]
    assert said["asked"] == "17-27" and said["given"] == "16-26" and said["size"] == len(PO)
    assert "whole UTF-8 characters" in said["why"]
    whole = ns.read(f"{base}fr.po?range=16-26")
    assert whole.body == "ééééé" and not (whole.meta or {}).get(RANGE_META)


@pytest.mark.parametrize("base", BASES)
def test_the_cap_is_inclusive(ns: Namespace, base: str) -> None:
    assert ns.read(f"{base}ascii.txt?range=0-{READ_CAP}").body == ASCII[:READ_CAP].decode()
    # the character across the cap is left to the next range: never a U+FFFD over the cap
    read = ns.read(f"{base}at-cap.txt?range=0-{READ_CAP}")
    assert read.body == "a" * (READ_CAP - 1)
    rest = ns.read(f"{base}at-cap.txt?range={READ_CAP}-{2 * READ_CAP}")
    assert rest.body == "é" + "b" * 100
    with pytest.raises(TooLarge) as refused:
        ns.read(f"{base}ascii.txt?range=0-{READ_CAP + 1}")
    assert refused.value.data["cap"] == READ_CAP


@pytest.mark.parametrize("base", BASES)
def test_a_raw_range_is_the_bytes_as_asked(ns: Namespace, base: str) -> None:
    read = ns.read(f"{base}fr.po?as=raw&range=17-27")
    assert read.body == PO[17:27]  # bytes, sent base64: both halves of a cut character
    assert read.meta is None


@pytest.mark.parametrize("base", BASES)
def test_text_that_is_not_utf8_is_answered_as_its_bytes(ns: Namespace, base: str) -> None:
    read = ns.read(f"{base}latin1.txt?range=0-100")
    assert read.body == LATIN1[:100]
    assert read.meta is not None and read.meta[RANGE_META]["why"] == NOT_UTF8  # type: ignore[index]


def offered_read(ns: Namespace, data: dict[str, Any]) -> None:
    """Every template a refusal offers reads, filled with a small part."""
    for part, sample in (("range", {"start": 0, "end": 10}), ("lines", {"first": 1, "last": 1})):
        if part in data:
            ns.read(data[part].format(**sample))
    ns.read(data["stat"])


@pytest.mark.parametrize("base", BASES)
def test_too_large_offers_only_parts_that_read(ns: Namespace, base: str) -> None:
    with pytest.raises(TooLarge) as text:
        ns.read(f"{base}ascii.txt")
    assert {"range", "lines"} <= set(text.value.data)
    offered_read(ns, text.value.data)
    with pytest.raises(TooLarge) as binary:
        ns.read(f"{base}big.bin")
    assert "lines" not in binary.value.data  # lines cut text: refused for a binary file
    offered_read(ns, binary.value.data)


def test_a_too_large_blame_offers_lines_not_bytes(ns: Namespace) -> None:
    uri = f"tm://{HOST}/git/tmsite/docs/fr.po?as=blame"
    with pytest.raises(TooLarge) as refused:
        ns.read(uri)
    data = refused.value.data
    assert "range" not in data  # a blame takes no range=
    assert data["lines"] == f"tm://{HOST}/git/tmsite/docs/fr.po?as=blame&lines={{first}}-{{last}}"
    offered_read(ns, data)
