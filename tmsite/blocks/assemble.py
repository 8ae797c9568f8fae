"""``?as=blocks``: any address assembled into blocks from the closed vocabulary.

The namespace routes a read whose ``as`` is ``blocks`` here. The thing itself is read through
the namespace (so parts, caps and links are as every surface sees them), its assembler turns it
into blocks, its links become ``link`` blocks, and the body lists every address read.

* ``?as=blocks&of=<facet>`` assembles a facet of the thing (``of=log`` is the history as a
  timeline); every other parameter (``at``, ``n``, ``lines``, ``cursor`` …) is the thing's own.
* A refused thing is not a refused blocks read: the blocks read answers a ``finding`` (the
  reason and the refusal's fields) and a ``question`` offering its nearest addresses, so a
  viewer draws the refusal like anything else. Only a URI that does not parse at all is refused.
* A read at a revision (``at=``) also gets a ``diff`` against the same address now.
* ``facets`` in the body are the thing's handles: the ``as`` values it is served in, asked of
  the namespace itself (a read with ``as=facets`` is refused ``bad-facet`` naming the valid
  ones, the mount's and the namespace's own). That probe is not listed among ``reads``.

Spec: BLOCKS.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from tmsite.blocks import vocabulary as v
from tmsite.blocks.registry import find
from tmsite.blocks.vocabulary import Block
from tmsite.core.errors import BadFacet, Refusal
from tmsite.core.facets import UnknownFacet
from tmsite.core.links import Link
from tmsite.core.parts import READ_CAP, dumps, to_text
from tmsite.core.types import Content, Reader, vnd
from tmsite.core.uri import TmUri, parse

#: The parameter only a blocks read takes: the facet of the thing to assemble.
OF = "of"
_FACET = re.compile(r"[a-z]{1,16}", re.ASCII)
#: The ``as`` value that asks a mount for its handles (it is refused with the valid list).
PROBE_FACET = "facets"
#: Where the schema of a blocks body is published, under the host.
SCHEMA_POINTER = "/blocks/schema"
#: A code block longer than this is cut to its first lines, with the way to read the rest.
CODE_CUT = 96 * 1024
_CUT_LINES = 1500
_DIFF_LINES = 400


class Context:
    """One blocks read: the namespace to read through, and every address read."""

    def __init__(self, namespace: Reader, uri: TmUri) -> None:
        self.namespace = namespace
        self.uri = uri
        self.reads: list[str] = []

    def read(self, target: TmUri | str) -> Content:
        """Read ``target`` through the namespace (which counts the blocks read, not these).

        Raises:
            Refusal: as the namespace refuses it.
        """
        text = str(target)
        if text not in self.reads:
            self.reads.append(text)
        return self.namespace.read(text)

    def try_read(self, target: TmUri | str) -> Content | None:
        """Like :meth:`read`, but None where the namespace refuses (still recorded as read)."""
        try:
            return self.read(target)
        except Refusal:
            return None


def blocks_uri(uri: TmUri) -> TmUri:
    """The blocks read of ``uri``: its facet, if any, moves to ``of``."""
    facet = uri.param("as")
    if facet == "blocks":
        return uri
    return uri.with_params({"as": "blocks", OF: facet})


def target_of(uri: TmUri) -> TmUri:
    """The address a blocks read stands for: ``of`` back into ``as``."""
    return uri.with_params({"as": uri.param(OF), OF: None})


def schema_uri(host: str) -> str:
    """The address of the blocks schema in ``host``'s manifest (a blocks body's ``schema``)."""
    return str(TmUri(host, "manifest").with_params(pointer=SCHEMA_POINTER))


def assemble(namespace: Reader, uri: TmUri) -> Content:
    """The ``?as=blocks`` read of ``uri`` (never refused once ``uri`` has parsed)."""
    ctx = Context(namespace, uri)
    target = target_of(uri)
    source = str(target)
    facet = uri.param(OF)
    links: list[Link] = []
    kind, mime_type, refused = "refusal", None, False
    try:
        if facet is not None and (not _FACET.fullmatch(facet) or facet == "blocks"):
            raise BadFacet(
                str(uri),
                "of= names the facet to assemble (such as log, stat or links), never blocks",
                valid=probe_facets(ctx, target),
            )
        content = ctx.read(target)
    except Refusal as refusal:
        refused = True
        blocks = refusal_blocks(source, refusal)
    else:
        source = content.uri
        kind, mime_type, links = content.kind, content.mime_type, list(content.links)
        blocks = find(content).fn(ctx, content)
        if target.param("at") is not None:
            blocks.extend(revision_diff(ctx, target, content))
        blocks.extend(v.link(source, link) for link in content.links)
    facets = [] if refused else probe_facets(ctx, target)
    body: dict[str, Any] = {
        "uri": str(uri),
        "source": source,
        "kind": kind,
        "refused": refused,
        "facets": facets,
        "schema": schema_uri(namespace.host),
        "reads": ctx.reads or [source],
        "blocks": blocks,
    }
    if mime_type is not None:
        body["mimeType"] = mime_type
    fit(body, target)
    own = [*links]
    if source.startswith("tm://"):
        own.append(Link("alternate", source, title="the thing these blocks stand for"))
    return Content(str(uri), vnd("blocks"), body, own, kind="blocks", part_applied=True)


def probe_facets(ctx: Context, target: TmUri) -> list[str]:
    """The ``as`` values ``target`` offers, as the namespace says when asked for an unknown one.

    The probe is not one of the addresses read: it is refused by design, and nothing drawn
    comes from it.
    """
    probe = target.keeping("at", **{"as": PROBE_FACET})
    try:
        ctx.namespace.read(str(probe))
    except UnknownFacet as refusal:
        return [
            f for f in refusal.offered if _FACET.fullmatch(f) and f not in {"blocks", PROBE_FACET}
        ]
    except Refusal:
        pass
    return []


# ---- refusals ------------------------------------------------------------------------------

#: Helper fields of a refusal that hold addresses a reader can follow, with their labels.
_FOLLOW = (("stat", "its metadata"), ("raw", "its bytes"), ("log", "its history"))


def refusal_blocks(source: str, refusal: Refusal) -> list[Block]:
    """A refusal drawn: a finding, and a question offering what resolves instead."""
    data = refusal.data
    where = source if source.startswith("tm://") else "tm://"
    blocks = [
        v.heading(where, f"Refused: {refusal.reason}"),
        v.finding(where, refusal.reason, refusal.message, data, str(data.get("uri", source))),
    ]
    unique = _unique([*_follow_options(data), *_facet_options(where, refusal)])
    if unique:
        prompt = (
            "Did you mean one of these?"
            if refusal.reason in {"not-found", "no-such-ref"}
            else "Where to go instead"
        )
        blocks.append(v.question(where, prompt, unique))
    return blocks


def _follow_options(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, address) for the ``tm://`` addresses a refusal's helper fields hold.

    The nearest ones and the roots first, each labelled by its name, then :data:`_FOLLOW`'s.
    """
    options: list[tuple[str, str]] = []
    for key in ("nearest", "roots"):
        for href in data.get(key) or []:
            if isinstance(href, str) and href.startswith("tm://"):
                options.append((_label(href), href))
    for key, label in _FOLLOW:
        href = data.get(key)
        if isinstance(href, str) and href.startswith("tm://"):
            options.append((label, href))
    return options


def _facet_options(where: str, refusal: Refusal) -> list[tuple[str, str]]:
    """For a ``bad-facet`` refusal, (``as <facet>``, address) for each facet it names valid.

    Not ``blocks``: these options are drawn from a blocks read already.
    """
    if refusal.reason != "bad-facet" or where == "tm://":
        return []
    try:
        base = parse(where)
    except Refusal:
        return []
    return [
        (f"as {facet}", str(base.with_params({"as": facet})))
        for facet in refusal.data.get("valid") or []
        if isinstance(facet, str) and _FACET.fullmatch(facet) and facet != "blocks"
    ]


def _unique(options: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The options in order, each address kept once (with its first label)."""
    unique: list[tuple[str, str]] = []
    for label, href in options:
        if all(href != kept for _, kept in unique):
            unique.append((label, href))
    return unique


def _label(href: str) -> str:
    try:
        uri = parse(href)
    except Refusal:
        return href
    name = uri.name or uri.host
    return name + ("/" if uri.collection and uri.path else "")


# ---- revisions --------------------------------------------------------------------------


def _comparable(content: Content) -> list[str] | None:
    if isinstance(content.body, bytes):
        return None
    if content.is_json:
        body = content.body
        if isinstance(body, dict):
            body = {k: val for k, val in body.items() if k not in {"uri", "at"}}
        text = json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True)
    else:
        text = to_text(content.body)
    return text.split("\n")


def revision_diff(ctx: Context, target: TmUri, then: Content) -> list[Block]:
    """What changed between the thing at ``at`` and the same address now."""
    now_uri = target.with_params(at=None)
    now = ctx.try_read(now_uri)
    if now is None:
        return [v.note(then.uri, f"{now_uri} does not resolve now", "warning")]
    old, new = _comparable(then), _comparable(now)
    if old is None or new is None:
        same = then.body == now.body
        return [v.note(then.uri, "unchanged since" if same else "the bytes differ now")]
    lines: list[dict[str, str]] = []
    for line in difflib.unified_diff(old, new, lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        op = line[:1] if line[:1] in {"+", "-", " ", "@"} else " "
        lines.append({"op": op, "text": line[1:]})
        if len(lines) >= _DIFF_LINES:
            break
    if not lines:
        return [v.note(then.uri, f"unchanged between {target.param('at')} and now")]
    return [v.diff(then.uri, then.uri, now.uri, lines)]


# ---- the read cap -----------------------------------------------------------------------


def fit(body: dict[str, Any], target: TmUri) -> None:
    """Keep the body under the read cap: long code is cut with the way to read the rest."""
    blocks: list[Block] = body["blocks"]
    for index, found in enumerate(list(blocks)):
        if found["kind"] != "code" or len(found["text"]) <= CODE_CUT:
            continue
        first = int(found.get("firstLine", 1))
        kept = found["text"].split("\n")[:_CUT_LINES]
        found["text"] = "\n".join(kept)
        last = first + len(kept) - 1
        rest = target.with_params(lines=f"{last + 1}-{last + _CUT_LINES}")
        blocks.insert(
            index + 1,
            v.question(
                found["from"],
                f"Shown: lines {first}-{last}. Read on in parts:",
                [(f"lines {last + 1}-{last + _CUT_LINES}", str(rest))],
            ),
        )
    if len(dumps(body).encode("utf-8", "surrogatepass")) <= READ_CAP:
        return
    source = body["source"]
    where = source if source.startswith("tm://") else "tm://"
    stat = str(target.keeping("at", **{"as": "stat"}))
    body["blocks"] = [
        v.heading(where, "Too large to draw whole"),
        v.finding(
            where,
            "too-large",
            f"its blocks take more than {READ_CAP} bytes: read it in parts",
            {"reason": "too-large", "cap": READ_CAP},
            source,
        ),
        v.question(where, "Read a part instead", [("its metadata", stat)]),
    ]
