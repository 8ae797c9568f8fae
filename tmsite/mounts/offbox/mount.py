"""The ``offbox`` mount: where a build chain leaves the box, named and never served.

``tm://<host>/offbox/`` lists the nodes of ``data/lineage.json`` (``offbox``: name → what,
why, ``generated_by``, ``input_of``); ``offbox/<name>`` reads as
``application/vnd.tm.offbox+json``: what it is, why it is not here, ``exposed: false`` and
``reason: "not-exposed"``. Its links go to the scripts in the checkout's repository
(``git/<repo>/<path>``): ``tm:generated-by`` to those that make it, ``tm:input-of`` to those
that read it, ``exact`` — the record states them. The inverse links, ``tm:generates`` and
``tm:input`` on those scripts, are given by :meth:`OffboxMount.links_into`, on the scripts as
the repository holds them now (no ``at``). Facets: none, or ``stat``.

The record is read from the checkout and parsed by
:func:`tmsite.entities.loaders.parse_lineage`; it is read again when its size or modification
time changes. A record that does not parse makes every node ``not-found`` with the reason.

Spec: OFFBOX, LK2.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from django.conf import settings
from typing_extensions import override

from tmsite.core.errors import NotFound
from tmsite.core.links import Link
from tmsite.core.types import Content, Entry, JsonValue, Listing, Request, Stat, Template, vnd
from tmsite.core.uri import TmUri
from tmsite.entities.loaders import LINEAGE_FILE, OffboxRecord, RecordError, parse_lineage
from tmsite.mounts.base import Mount, whole_stat
from tmsite.mounts.git import uris as git_uris


class OffboxMount(Mount):
    """The offbox nodes of the lineage record in ``checkout``; scripts are in ``repo_name``."""

    name = "offbox"
    title = "What is kept off the box"
    what = (
        "Where a build chain leaves the box (cartridge images, models made beside them): "
        "what each is and why it is not here, linked to the scripts that make and read it."
    )

    def __init__(self, host: str, checkout: Path, repo_name: str = "tmsite") -> None:
        super().__init__(host)
        self.checkout = checkout
        self.repo_name = repo_name
        self._lock = threading.Lock()
        self._cached: tuple[tuple[int, int], tuple[OffboxRecord, ...] | RecordError] | None = None

    @classmethod
    def from_settings(cls, host: str) -> OffboxMount:
        """The mount over ``TM_CHECKOUT``, its scripts in the repository ``TM_CHECKOUT_REPO``."""
        return cls(
            host, Path(settings.TM_CHECKOUT), getattr(settings, "TM_CHECKOUT_REPO", "tmsite")
        )

    # ---- the record -----------------------------------------------------------------------

    def nodes(self) -> tuple[OffboxRecord, ...] | RecordError:
        """The record's nodes (read again when the file changes), or why it does not parse."""
        path = self.checkout / LINEAGE_FILE
        try:
            info = path.stat()
        except OSError:
            return RecordError(LINEAGE_FILE, "(top level)", "the record does not exist")
        stamp = (info.st_mtime_ns, info.st_size)
        with self._lock:
            if self._cached is not None and self._cached[0] == stamp:
                return self._cached[1]
        try:
            found: tuple[OffboxRecord, ...] | RecordError = parse_lineage(path.read_bytes())
        except RecordError as exc:
            found = exc
        except OSError:
            found = RecordError(LINEAGE_FILE, "(top level)", "the record cannot be read")
        with self._lock:
            self._cached = (stamp, found)
        return found

    @override
    def absent(self) -> str | None:
        if (self.checkout / LINEAGE_FILE).exists():
            return None
        return f"the served checkout has no {LINEAGE_FILE}: nothing is named as kept off the box"

    def _by_name(self, req: Request) -> dict[str, OffboxRecord]:
        if self.absent() is not None:
            return {}
        nodes = self.nodes()
        if isinstance(nodes, RecordError):
            raise NotFound(req.text, f"the lineage record does not parse: {nodes}", nearest=[])
        return {node.name: node for node in nodes}

    def script_uri(self, path: str) -> TmUri:
        """The git mount's URI of a script of the checkout (at the default revision)."""
        return git_uris.file_uri(self.host, self.repo_name, path)

    # ---- the contract ---------------------------------------------------------------------

    @override
    def list(self, req: Request) -> Listing:
        if req.uri.path:
            if len(req.uri.path) == 1 and req.uri.path[0] in self._by_name(req):
                raise NotFound(
                    req.text,
                    "an offbox node is not a collection: its URI has no trailing /",
                    nearest=[str(req.uri.as_leaf())],
                )
            raise NotFound(req.text, "offbox/ holds nodes only, no collections")
        nodes = self._by_name(req)
        why = self.absent()
        return Listing(
            [
                Entry(str(self.uri(name)), name, False, vnd("offbox"), title=node.what)
                for name, node in nodes.items()
            ],
            extra={"absent": why} if why else {},
        )

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        name = self.flat_leaf(req, "an offbox node")
        node = self._by_name(req).get(name)
        if node is None:
            why = self.absent()
            raise NotFound(req.text, f"no offbox node named {name!r}" + (f": {why}" if why else ""))
        me = self.uri(node.name)
        links = self.leaf_links(uri, me)
        if req.facets.facet == "stat":
            whole_stat(req)
            stat = Stat(
                str(me),
                node.name,
                vnd("offbox"),
                extra={
                    "exposed": False,
                    "record": {"file": LINEAGE_FILE, "pointer": f"/offbox/{node.name}"},
                },
            )
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        for path in node.generated_by:
            links.append(
                Link("tm:generated-by", str(self.script_uri(path)), "exact", title="makes it")
            )
        for path in node.input_of:
            links.append(Link("tm:input-of", str(self.script_uri(path)), "exact", title="reads it"))
        body: dict[str, JsonValue] = {
            "uri": str(me),
            "name": node.name,
            "what": node.what,
            "why": node.why,
            "exposed": False,
            "reason": "not-exposed",
            "generatedBy": [str(self.script_uri(p)) for p in node.generated_by],
            "inputOf": [str(self.script_uri(p)) for p in node.input_of],
            "record": {"file": LINEAGE_FILE, "pointer": f"/offbox/{node.name}"},
        }
        return Content(req.text, vnd("offbox"), body, links, kind="offbox")

    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        """``tm:generates`` / ``tm:input`` on the scripts the record names (at the default ref)."""
        if uri.mount != "git" or uri.collection or len(uri.path) < 2 or uri.param("at"):
            return []
        if uri.path[0] != self.repo_name:
            return []
        nodes = self.nodes()
        if isinstance(nodes, RecordError):
            return []
        path = "/".join(uri.path[1:])
        links = []
        for node in nodes:
            href = str(self.uri(node.name))
            if path in node.generated_by:
                links.append(Link("tm:generates", href, "exact", title=node.what))
            if path in node.input_of:
                links.append(Link("tm:input", href, "exact", title=node.what))
        return links

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        return self.complete_flat_leaf(argument, value, self._names)

    def _names(self) -> builtins.list[str]:
        nodes = self.nodes()
        if isinstance(nodes, RecordError):
            return []
        return [n.name for n in nodes]

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "offbox",
                f"tm://{self.host}/offbox/{{name}}",
                "Something kept off the box",
                "A node of data/lineage.json: what it is and why it is not here (exposed: "
                "false, never served). Links tm:generated-by and tm:input-of to the scripts in "
                "git that make and read it; those scripts link back tm:generates and tm:input. "
                "offbox/ lists the nodes; ?as=stat for metadata.",
                ("name", "as"),
                vnd("offbox"),
            )
        ]

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
