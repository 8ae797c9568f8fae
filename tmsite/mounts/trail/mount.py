"""The ``trail`` mount: named, ordered walks through the namespace.

A trail is a file ``notes/trails/<name>.json`` (title, description, steps: each a ``tm://``
address and a note). It reads two ways: as the file it is, through ``fs/notes/trails/…``
(unchanged), and as a trail here, ``tm://<host>/trail/<name>``, typed
``application/vnd.tm.trail+json`` with its steps in order. The two link each other
``alternate``. A maintainer's correction in the admin wins over the file
(:func:`tmsite.trails.index.current`): the trail reads as corrected (``"corrected": true``), a
trail added there has no file (and no ``alternate``), a retired one is not served. Listings and
stats are dated (``lastModified``, ``modified``): the later of the file's modification time and
the latest correction.

A trail links ``tm:step`` to each step (``exact``: the file states it; the link's title says its
place). The read of any step carries ``tm:step-of`` to every trail it is on, from the index in
the database (:mod:`tmsite.trails.index`), matched on the step's address without parameters
but ``at``. Steps that do not resolve are reported by the system check ``tm.W021`` and by the
link walk; a trail file that does not parse by ``tm.W020``.

Spec: TRAILS, LK2.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Hashable, Iterator, Mapping
from functools import partial
from pathlib import Path

from django.conf import settings
from typing_extensions import override

from tmsite.core.errors import NotFound
from tmsite.core.links import Link
from tmsite.core.types import (
    Content,
    Document,
    Entry,
    JsonValue,
    Listing,
    Request,
    Stat,
    Template,
    vnd,
)
from tmsite.core.uri import TmUri
from tmsite.mounts.base import ChangeSource, Mount, Watching, whole_stat
from tmsite.mounts.fs import uris as fs_uris
from tmsite.mounts.trail import checks as _checks  # noqa: F401  (registers the trail checks)
from tmsite.mounts.trail import watch
from tmsite.trails import index


class TrailMount(Mount):
    """``trail/``: one leaf per parsable trail file in the checkout's ``notes/trails/``."""

    name = "trail"
    title = "Trails"
    what = "Named, ordered walks through the namespace, each step an address and a note."

    def __init__(self, host: str, checkout: Path) -> None:
        super().__init__(host)
        self.checkout = checkout

    @classmethod
    def from_settings(cls, host: str) -> TrailMount:
        """The mount over the served checkout (``TM_CHECKOUT``), as the registry builds it."""
        return cls(host, Path(settings.TM_CHECKOUT))

    def file_uri(self, name: str) -> TmUri:
        """The ``fs/notes/trails/<name>.json`` address the trail ``name`` is read from."""
        return fs_uris.file_uri(self.host, (*index.TRAILS_DIR, f"{name}.json"))

    @override
    def list(self, req: Request) -> Listing:
        view = index.current(self.checkout)
        if req.uri.path:
            if len(req.uri.path) == 1 and view.served(req.uri.path[0]):
                raise NotFound(
                    req.text,
                    "a trail is not a collection: its URI has no trailing /",
                    nearest=[str(req.uri.as_leaf())],
                )
            raise NotFound(req.text, "trail/ holds trails only, no collections")
        return Listing(
            [
                Entry(
                    str(self.uri(k.name)),
                    k.name,
                    False,
                    vnd("trail"),
                    title=k.trail.title,
                    extra={"steps": len(k.trail.steps)},
                    modified=k.modified,
                )
                for k in view.known.values()
                if k.trail is not None
            ]
        )

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        name = self.flat_leaf(req, "a trail")
        known = index.current(self.checkout).known.get(name)
        if known is not None and known.state == "broken":
            raise NotFound(req.text, f"the trail file does not parse: {known.problem}")
        if known is None or known.trail is None:
            raise NotFound(req.text, f"no trail named {name!r}")
        trail = known.trail
        me = self.uri(name)
        links = self.leaf_links(uri, me)
        own: dict[str, JsonValue] = {"corrected": known.corrected}
        if known.has_file:
            own["file"] = str(self.file_uri(name))
            title = "the file this trail is read from"
            if known.corrected:
                title = "the file this trail was read from before it was corrected"
            links.append(Link("alternate", own["file"], title=title))
        if req.facets.facet == "stat":
            whole_stat(req)
            stat = Stat(
                str(me),
                name,
                vnd("trail"),
                modified=known.modified,
                extra={"title": trail.title, "steps": len(trail.steps), **own},
            )
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        for step in trail.steps:
            links.append(
                Link("tm:step", step.uri, "exact", title=f"step {step.position}: {step.note}"[:200])
            )
        body: dict[str, JsonValue] = {
            "uri": str(me),
            "name": name,
            "title": trail.title,
            "description": trail.description,
            "steps": [{"n": s.position, "uri": s.uri, "note": s.note} for s in trail.steps],
            **own,
        }
        return Content(req.text, vnd("trail"), body, links, kind="trail")

    @override
    def stamp(self, uri: TmUri) -> Hashable | None:
        """The trails' files (a stat each) and corrections' version, as a read trusts them."""
        if len(uri.path) != 1:
            return None
        files, version = index.current(self.checkout).signature
        return tuple(files.items()), version

    @override
    def links_stamp(self) -> Hashable:
        """How many times this process dropped its trails (a correction saved here).

        A trail file added or edited on disk is not stat-ed here, before every kept read of
        every mount: the kept read's links are compared again once a second old.
        """
        return index.forgotten()

    @override
    def links_into(self, uri: TmUri) -> builtins.list[Link]:
        """``tm:step-of`` on every step's read; ``alternate`` from a trail's file to the trail."""
        links = []
        if (
            uri.mount == "fs"
            and len(uri.path) == 3
            and uri.path[:2] == index.TRAILS_DIR
            and uri.path[2].endswith(".json")
            and not uri.params
        ):
            name = uri.path[2].removesuffix(".json")
            if index.current(self.checkout).served(name):
                links.append(Link("alternate", str(self.uri(name)), title="read as a trail"))
        if uri.is_hosts or uri.host != self.host:
            return links
        for trail, position, note in index.trails_of(uri, self.checkout):
            links.append(
                Link(
                    "tm:step-of",
                    str(self.uri(trail)),
                    "exact",
                    title=f"step {position} of the trail {trail}: {note}"[:200],
                )
            )
        return links

    @override
    def change_sources(self, watching: Watching) -> builtins.list[ChangeSource]:
        return [watching.stamped(self.name, watch.stamp, watch.SENDERS)]

    @override
    def documents_stamp(self) -> Hashable:
        return watch.stamp(self.checkout)

    @override
    def documents(self) -> Iterator[Document]:
        """Each trail that reads: its title, description and steps' notes, by its text's digest."""
        for name, known in sorted(index.current(self.checkout).known.items()):
            trail = known.trail
            if trail is None or known.state == "broken":
                continue
            lines = [trail.title, trail.description]
            lines += [f"{step.position}. {step.note} {step.uri}" for step in trail.steps]
            text = "\n".join(lines) + "\n"
            stamp = hashlib.blake2s(text.encode("utf-8"), digest_size=8).hexdigest()
            yield Document(
                str(self.uri(name)), trail.title, "trail", stamp, vnd("trail"), partial(str, text)
            )

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        return self.complete_flat_leaf(
            argument, value, lambda: [t.name for t in index.current(self.checkout).trails]
        )

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "trail",
                f"tm://{self.host}/trail/{{name}}",
                "A trail through the namespace",
                "A named, ordered walk: its title, description and steps, each a tm:// address "
                "and a note, linked tm:step in order (the link title says the place). Every "
                "step links back tm:step-of. The same trail is the file "
                "fs/notes/trails/<name>.json. trail/ lists them.",
                ("name", "as"),
                vnd("trail"),
            )
        ]
