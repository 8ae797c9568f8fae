"""The ``kinds`` mount: every kind of thing this host has served, measured from real reads.

``tm://<host>/kinds/`` lists the kinds served since the host began recording (a kind never
served is absent); ``tm://<host>/kinds/<kind>`` says how many times it was served, as which
media types, carrying which link relations (each with the number of reads that carried it),
and when it was first and last served. ``?as=stat`` is its metadata.

The counts come from :mod:`tmsite.kinds.counter`: per-process counters the namespace feeds on
every finished read, flushed to the database in batches; a read here adds this process's
pending counts to the stored ones, so it is exact for this process and at most one batch behind
for the others.

Spec: KINDS.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping

from typing_extensions import override

from tmsite.core.errors import NotFound
from tmsite.core.links import Link
from tmsite.core.types import Content, Entry, Listing, Request, Stat, Template, vnd
from tmsite.kinds.counter import COUNTER, KindCounter, Seen, served
from tmsite.mounts.base import ChangeSource, Mount, Watching, require_no_part, unknown_argument
from tmsite.mounts.kinds import watch

_KIND = re.compile(r"[a-z][a-z0-9-]{0,63}", re.ASCII)


class KindsMount(Mount):
    """The kinds served, read from ``counter`` (and, with ``store``, from the database)."""

    name = "kinds"
    title = "The kinds served"
    what = "Every kind of thing this host has served: how often, as what, with which links."

    def __init__(
        self, host: str, counter: KindCounter | None = None, *, store: bool = True
    ) -> None:
        super().__init__(host)
        self.counter = counter if counter is not None else COUNTER
        self.store = store

    def _served(self) -> dict[str, Seen]:
        return served(self.counter, self.store)

    @override
    def list(self, req: Request) -> Listing:
        if req.uri.path:
            raise NotFound(req.text, "kinds/ has no collection below it")
        children = [
            Entry(
                str(self.uri(kind)),
                kind,
                False,
                vnd("kind"),
                title=f"served {seen.count} times",
                extra={"count": seen.count},
            )
            for kind, seen in self._served().items()
        ]
        return Listing(children, extra={"total": len(children)})

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        if uri.collection:
            req.facets.require_facet(req.text, (), "the list of kinds")
        req.facets.require(req.text, ("as", "pointer"), "a kind")
        req.facets.require_facet(req.text, ("stat",), "a kind")
        if not uri.path:
            raise self.leaf_as_collection(uri)
        if len(uri.path) > 1:
            raise NotFound(req.text, "a kind has nothing under it")
        name = uri.path[0]
        if not _KIND.fullmatch(name):
            raise NotFound(req.text, "no kind of that shape", expected="lowercase, like listing")
        seen = self._served().get(name)
        if seen is None:
            raise NotFound(req.text, f"the kind {name!r} has not been served on this host")
        me = self.uri(name)
        links = self.leaf_links(uri, me)
        if req.facets.facet == "stat":
            require_no_part(req, "a stat")
            stat = Stat(
                str(me),
                name,
                vnd("kind"),
                extra={
                    "count": seen.count,
                    "lastServed": seen.last.isoformat() if seen.last else None,
                },
            )
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        body = {"uri": str(me), **seen.to_json(name)}
        return Content(req.text, vnd("kind"), body, links, kind="kind")

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        return [watching.stamped(self.name, watch.stamp, watch.SENDERS)]

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument != "kind":
            raise unknown_argument(argument, ["kind"])
        return [kind for kind in self._served() if kind.startswith(value)][:101]

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "kinds",
                f"tm://{self.host}/kinds/{{kind}}",
                "A kind this host has served",
                "kinds/ lists every kind of thing this host has served since it began "
                "recording; kinds/<kind> says how many times, as which media types, carrying "
                "which link relations, first and last served. A kind never served is absent.",
                ("kind",),
                vnd("kind"),
            )
        ]
