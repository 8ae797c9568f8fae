"""The box's icon: one mark, drawn as SVG and rasterised to PNG, served by the box itself.

``ICONS`` is the one table: the file under ``tmsite/site/static/``, the path the site serves it
at, its media type and the sizes it is good for. The site's routes are made from it, and
``serverInfo`` and every ``tools/list`` entry name it by absolute URL on the box's own public
address (same origin, as the protocol asks of icon URLs). The PNG is drawn from the SVG by
``scripts/make_icon.py``.

Spec: T9.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Where the icon files are.
DIRECTORY = Path(__file__).resolve().parent / "site" / "static"


@dataclass(frozen=True)
class IconFile:
    """One form of the icon: its file, the path it is served at, its type and sizes."""

    file: str
    path: str
    mime_type: str
    sizes: tuple[str, ...]

    @property
    def location(self) -> Path:
        """The file on disk."""
        return DIRECTORY / self.file


ICONS: tuple[IconFile, ...] = (
    IconFile("icon.svg", "icon.svg", "image/svg+xml", ("any",)),
    IconFile("icon.png", "icon.png", "image/png", ("256x256",)),
)


def icons(origin: str) -> list[dict[str, object]]:
    """The protocol's ``Icon`` list for the box at ``origin`` (``scheme://host[:port]``)."""
    base = origin.rstrip("/")
    return [
        {"src": f"{base}/{icon.path}", "mimeType": icon.mime_type, "sizes": list(icon.sizes)}
        for icon in ICONS
    ]
