"""The ``renderers`` mount: per media type, the browser module that draws it.

``tm://<host>/renderers/`` lists the media type families (``text/``, ``image/`` …);
``renderers/<type>/`` their subtypes; ``renderers/<type>/<subtype>`` one renderer: the module's
address on the site (``module``, served by the site itself) and the SHA-256 of the file as it is
served, computed from the file when read — so a viewer can check what it imports. ``*`` stands
for a whole family (``renderers/image/*``). ``?as=stat`` is a renderer's metadata.

Spec: RENDERERS.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Iterator, Mapping

from typing_extensions import override

from tmsite.core.errors import NotFound, OutOfRoot
from tmsite.core.links import Link
from tmsite.core.types import Content, Entry, Listing, Request, Stat, Template, vnd
from tmsite.mounts.base import Mount, require_no_part, unknown_argument
from tmsite.mounts.renderers.catalogue import (
    RENDERERS,
    STATIC_DIR,
    families,
    module_url,
    renderer_uri,
)


class RenderersMount(Mount):
    """The renderers' catalogue, two levels deep: a family, then a subtype."""

    name = "renderers"
    title = "The renderers"
    what = "Per media type, the browser module that draws it: its address and SHA-256."

    def renderer_uri(self, media_type: str) -> str:
        """The address of the renderer for ``media_type`` on this host."""
        return renderer_uri(self.host, media_type)

    def _plain_names(self, req: Request) -> None:
        """A listing or read whose path is not plain names leaves ``renderers/``."""
        for segment in req.uri.path:
            if segment in {"", ".", ".."} or any(ch in segment for ch in "/\\\x00"):
                raise OutOfRoot(req.text, "a media type is two plain names", roots=[str(self.root)])

    @override
    def list(self, req: Request) -> Listing:
        self._plain_names(req)
        path = req.uri.path
        table = families()
        if not path:
            return Listing(
                [
                    Entry(str(self.uri(f, collection=True)), f"{f}/", True, vnd("listing"))
                    for f in table
                ]
            )
        if len(path) > 1:
            raise NotFound(req.text, "a media type has two parts: renderers/<type>/<subtype>")
        family = path[0]
        if family not in table:
            raise NotFound(req.text, f"no renderer draws {family}/ types")
        children = []
        for subtype in table[family]:
            file_name = RENDERERS[f"{family}/{subtype}"]
            children.append(
                Entry(
                    str(self.uri(family, subtype)),
                    subtype,
                    False,
                    vnd("renderer"),
                    (STATIC_DIR / file_name).stat().st_size,
                    title=module_url(file_name),
                )
            )
        return Listing(children)

    @override
    def read(self, req: Request) -> Content:
        uri = req.uri
        if uri.collection:
            req.facets.require_facet(req.text, (), "a list of renderers")
        req.facets.require(req.text, ("as", "pointer"), "a renderer")
        req.facets.require_facet(req.text, ("stat",), "a renderer")
        self._plain_names(req)
        if len(uri.path) < 2:
            if uri.path and uri.path[0] in families():
                raise self.leaf_as_collection(uri)
            raise NotFound(req.text, "a renderer is renderers/<type>/<subtype>")
        if len(uri.path) > 2:
            raise NotFound(req.text, "a renderer has nothing under it")
        media = "/".join(uri.path)
        file_name = RENDERERS.get(media)
        if file_name is None:
            raise NotFound(req.text, f"no renderer is registered for {media}")
        me = self.uri(*uri.path)
        links = self.leaf_links(uri, me)
        data = (STATIC_DIR / file_name).read_bytes()
        if req.facets.facet == "stat":
            require_no_part(req, "a stat")
            stat = Stat(str(me), uri.path[1], vnd("renderer"), size=len(data))
            return stat.content(req.text, [*links, Link("alternate", str(me))])
        body = {
            "uri": str(me),
            "mediaType": media,
            "module": module_url(file_name),
            "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data),
            "moduleType": "text/javascript",
        }
        return Content(req.text, vnd("renderer"), body, links, kind="renderer")

    @override
    def complete(self, argument: str, value: str, context: Mapping[str, str]) -> builtins.list[str]:
        if argument != "type":
            raise unknown_argument(argument, ["type"])
        return [media for media in RENDERERS if media.startswith(value)]

    @override
    def templates(self) -> builtins.list[Template]:
        return [
            Template(
                "renderers",
                f"tm://{self.host}/renderers/{{+type}}",
                "The module that draws a media type",
                "renderers/<type>/<subtype> (e.g. renderers/text/markdown; * for a whole "
                "family) is the browser module that draws that media type: its address on the "
                "site and the SHA-256 of the file served there.",
                ("type",),
                vnd("renderer"),
            )
        ]

    @override
    def collections(self, limit: int = 10_000) -> Iterator[Entry]:
        yield from super().collections(limit)
        for family in families():
            yield Entry(str(self.uri(family, collection=True)), f"{family}/", True, vnd("listing"))
