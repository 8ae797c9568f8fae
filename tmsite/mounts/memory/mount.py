"""An in-process mount over a dict: the smallest complete mount.

It serves the shared mount suite as a second implementation of the contract, and shows in one
screen what a mount must do. It is not in the default registry.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping
from typing import Any

from typing_extensions import override

from tmsite.core.errors import NotFound, OutOfRoot
from tmsite.core.links import Link
from tmsite.core.types import Content, Entry, Listing, Request, Stat, Template, vnd
from tmsite.core.uri import TmUri
from tmsite.mime import by_name
from tmsite.mounts.base import Mount, unknown_argument, whole_stat

Tree = Mapping[str, Any]  # name → str (a text file) or Tree (a directory)


class MemoryMount(Mount):
    """A ``tree`` of names: a string is a text file, a mapping a directory."""

    name = "memory"
    title = "An in-memory tree"
    what = "A tree of text files held in memory."

    def __init__(self, host: str, tree: Tree) -> None:
        super().__init__(host)
        self.tree = tree

    def _node(self, uri: TmUri) -> Any:
        node: Any = self.tree
        for segment in uri.path:
            if segment in {"", ".", ".."} or "/" in segment:
                raise OutOfRoot(str(uri), "paths are plain names", roots=[str(self.root)])
            if not isinstance(node, Mapping) or segment not in node:
                raise NotFound(str(uri), "no such entry")
            node = node[segment]
        return node

    @override
    def list(self, req: Request) -> Listing:
        node = self._node(req.uri)
        if not isinstance(node, Mapping):
            raise NotFound(req.text, "that is a file", nearest=[str(req.uri.as_leaf())])
        children = []
        for key in sorted(node, key=lambda k: (not isinstance(node[k], Mapping), k)):
            is_dir = isinstance(node[key], Mapping)
            uri = req.uri.identity.child(key, collection=is_dir)
            if is_dir:
                children.append(Entry(str(uri), f"{key}/", True, vnd("listing")))
            else:
                children.append(
                    Entry(str(uri), key, False, self._type(key), len(node[key].encode()))
                )
        return Listing(children)

    def _type(self, name: str) -> str:
        return by_name(name) or "text/plain"

    @override
    def read(self, req: Request) -> Content:
        if req.uri.collection:
            req.facets.require_facet(req.text, (), "a directory")
        req.facets.require(req.text, ("as", "lines", "pointer", "range"), "a file")
        req.facets.require_facet(req.text, ("raw", "stat"), "a file")
        node = self._node(req.uri)
        if isinstance(node, Mapping):
            raise self.leaf_as_collection(req.uri)
        links = self.leaf_links(req.uri, req.uri.identity)
        mime_type = self._type(req.uri.name)
        if req.facets.facet == "stat":
            whole_stat(req)
            me = str(req.uri.identity)
            stat = Stat(me, req.uri.name, mime_type, size=len(node.encode()))
            return stat.content(req.text, [*links, Link("alternate", me)])
        return Content(req.text, mime_type, node, links)

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument != "path":
            raise unknown_argument(argument, ["path"])
        directory, _, leaf = value.rpartition("/")
        uri = self.uri(*[s for s in directory.split("/") if s], collection=True)
        try:
            node = self._node(uri)
        except (NotFound, OutOfRoot):
            return []
        if not isinstance(node, Mapping):
            return []
        prefix = f"{directory}/" if directory else ""
        return [
            prefix + key + ("/" if isinstance(node[key], Mapping) else "")
            for key in sorted(node)
            if key.startswith(leaf)
        ]

    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        """The mount root and every directory below it, for the ``resources/list`` map."""
        yield from super().collections(limit)
        for entry in self.walk(limit=limit):
            if entry.collection:
                yield entry

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "memory",
                f"tm://{self.host}/memory/{{+path}}",
                "An in-memory file",
                "A file or directory of the in-memory tree.",
                ("path",),
            )
        ]
