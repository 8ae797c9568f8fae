"""Draw the box's PNG icon from its SVG: ``python scripts/make_icon.py [--check]``.

The SVG (``tmsite/site/static/icon.svg``) is the one drawing; this script rasterises it to
``icon.png`` beside it, 256 by 256, with 4 by 4 samples a pixel, in plain Python (no image
library). It reads only what the drawing uses: ``rect`` (with ``rx``) and ``circle``, each with
a ``#rrggbb`` fill, painted in document order. ``--check`` exits 1 when the committed PNG's
pixels are not the ones the SVG draws.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path
from xml.etree import ElementTree

STATIC = Path(__file__).resolve().parents[1] / "tmsite" / "site" / "static"
SVG = STATIC / "icon.svg"
PNG = STATIC / "icon.png"
SIZE = 256
SAMPLES = 4
_NS = "{http://www.w3.org/2000/svg}"

Shape = tuple[str, tuple[float, ...], tuple[int, int, int]]


def shapes(svg: str) -> tuple[float, list[Shape]]:
    """The drawing's width (its viewBox is square from 0) and its shapes in paint order."""
    root = ElementTree.fromstring(svg)
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    if width != height:
        raise ValueError("the icon's viewBox must be square")
    out: list[Shape] = []
    for node in root:
        tag = node.tag.removeprefix(_NS)
        if tag == "title":
            continue
        a = node.attrib
        fill = a["fill"].lstrip("#")
        colour = (int(fill[0:2], 16), int(fill[2:4], 16), int(fill[4:6], 16))
        if tag == "rect":
            geometry = tuple(float(a.get(k, "0")) for k in ("x", "y", "width", "height", "rx"))
        elif tag == "circle":
            geometry = tuple(float(a[k]) for k in ("cx", "cy", "r"))
        else:
            raise ValueError(f"the icon may use rect and circle only, not {tag}")
        out.append((tag, geometry, colour))
    return width, out


def _inside(tag: str, g: tuple[float, ...], x: float, y: float) -> bool:
    if tag == "circle":
        cx, cy, r = g
        return (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    left, top, w, h, rx = g
    if not (left <= x <= left + w and top <= y <= top + h):
        return False
    dx = max(left + rx - x, 0.0, x - (left + w - rx))
    dy = max(top + rx - y, 0.0, y - (top + h - rx))
    return dx * dx + dy * dy <= rx * rx


def _bounds(tag: str, g: tuple[float, ...]) -> tuple[float, float, float, float]:
    if tag == "circle":
        cx, cy, r = g
        return cx - r, cy - r, cx + r, cy + r
    left, top, w, h, _ = g
    return left, top, left + w, top + h


def _samples(drawn: list[Shape], width: float, n: int) -> list[int]:
    """The index of the topmost shape under each of ``n`` by ``n`` samples (-1: none)."""
    scale = width / n
    sample: list[int] = [-1] * (n * n)
    for index, (tag, g, _) in enumerate(drawn):
        x0, y0, x1, y1 = _bounds(tag, g)
        columns = range(max(0, int(x0 / scale)), min(n, int(x1 / scale) + 1))
        for sy in range(max(0, int(y0 / scale)), min(n, int(y1 / scale) + 1)):
            y = (sy + 0.5) * scale
            row = sy * n
            for sx in columns:
                if _inside(tag, g, (sx + 0.5) * scale, y):
                    sample[row + sx] = index
    return sample


def _pixel(covering: list[tuple[int, int, int]]) -> bytes:
    """One pixel: the mean colour of the samples a shape covers, alpha the share covered."""
    covered = len(covering)
    if not covered:
        return b"\0\0\0\0"
    half = covered // 2
    mean = [(sum(c[k] for c in covering) + half) // covered for k in range(3)]
    alpha = (covered * 255 + SAMPLES * SAMPLES // 2) // (SAMPLES * SAMPLES)
    return bytes((*mean, alpha))


def pixels(svg: str, size: int = SIZE) -> bytes:
    """RGBA bytes, row by row, of the drawing at ``size`` by ``size``."""
    width, drawn = shapes(svg)
    n = size * SAMPLES
    sample = _samples(drawn, width, n)
    colours = [colour for _, _, colour in drawn]
    out = bytearray()
    for py in range(size):
        for px in range(size):
            covering = [
                colours[index]
                for sy in range(py * SAMPLES, (py + 1) * SAMPLES)
                for index in sample[sy * n + px * SAMPLES : sy * n + (px + 1) * SAMPLES]
                if index >= 0
            ]
            out += _pixel(covering)
    return bytes(out)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(rgba: bytes, size: int = SIZE) -> bytes:
    """A PNG of ``rgba`` (8-bit RGBA, no filtering), nothing else in it."""
    stride = size * 4
    raw = b"".join(b"\0" + rgba[y * stride : (y + 1) * stride] for y in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def decoded(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and RGBA bytes of a PNG this script wrote (8-bit RGBA, filter 0 rows)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type = struct.unpack(">IIBB", body[:10])
            if (depth, colour_type) != (8, 6):
                raise ValueError("not 8-bit RGBA")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * 4 + 1
    rows = [raw[y * stride : (y + 1) * stride] for y in range(height)]
    if any(row[0] != 0 for row in rows):
        raise ValueError("a row is filtered")
    return width, height, b"".join(row[1:] for row in rows)


def main(argv: list[str]) -> int:
    drawn = pixels(SVG.read_text())
    if argv[1:] == ["--check"]:
        if decoded(PNG.read_bytes()) != (SIZE, SIZE, drawn):
            print(f"{PNG} is not what {SVG} draws: run python scripts/make_icon.py")
            return 1
        return 0
    PNG.write_bytes(png(drawn))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
