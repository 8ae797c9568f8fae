r"""Proposal text: plain text, normalised and capped, refused when it hides anything.

Every text field of a proposal passes :func:`clean`: NFC, line ends made ``\\n``, outer
whitespace trimmed, and refused (``BadArgument`` naming the field, what is wrong and the cap)
when it holds a control character (but a line end or tab where lines are allowed), a bidi
control (the overrides and isolates that make text read other than it is stored) or is
longer than its cap. The text is kept as given and never rendered: the admin escapes it.

Spec: PROP1, PROP2, PROP3.
"""

from __future__ import annotations

import unicodedata

from tmsite.core.errors import BadArgument

#: Characters that reorder or hide text: embeddings, overrides, isolates, marks.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
#: The most characters each kind of field holds.
CAPS: dict[str, int] = {
    "uri": 1000,
    "name": 64,
    "title": 200,
    "rel": 40,
    "field": 40,
    "entry": 300,
    "value": 2000,
    "note": 500,
    "text": 2000,
}


def _bad(field: str, problem: str) -> BadArgument:
    return BadArgument(
        None,
        f"{field} {problem}; proposals are plain text: printable characters, line ends in "
        "notes, no control or bidi characters",
        field=field,
    )


def clean(field: str, value: object, cap: str, *, lines: bool = False) -> str:
    """``value`` as stored: a normalised string within ``CAPS[cap]`` characters.

    Raises:
        BadArgument: not a string, empty, too long, or holding a control or bidi character.
    """
    if not isinstance(value, str):
        raise _bad(field, "must be a string")
    text = unicodedata.normalize("NFC", value.replace("\r\n", "\n")).strip()
    limit = CAPS[cap]
    if len(text) > limit:
        raise BadArgument(
            None,
            f"{field} is {len(text)} characters; at most {limit} are taken",
            field=field,
            limit=limit,
        )
    for char in text:
        if char in BIDI:
            raise _bad(field, f"holds the bidi control U+{ord(char):04X}")
        if char in "\n\t" and lines:
            continue
        if unicodedata.category(char) in {"Cc", "Cf", "Cs", "Co"} and char not in "\u200d":
            raise _bad(field, f"holds the control character U+{ord(char):04X}")
    if not text:
        raise _bad(field, "is empty")
    return text
