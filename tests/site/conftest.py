"""A served checkout in a temporary directory, with documents, a Japanese shadow and records.

```
<checkout>/
  docs/index.md            /docs            and /ja/docs (fallback: no docs/ja/index.md)
  docs/nes/index.md        /docs/nes        and /ja/docs/nes (shadowed)
  docs/nes/pile.md         /docs/nes/pile   and /ja/docs/nes/pile (shadowed)
  docs/nes/alone.md        /docs/nes/alone  and /ja/docs/nes/alone (fallback)
  docs/README.md           no page
  docs/_draft.md           no page
  docs/styles/x.md         no page
  docs/ja/nes/index.md
  docs/ja/nes/pile.md
  data/pieces.json
  settings.md, secret.txt  outside docs/: must never be read by a page
```
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SECRET = "THIS-MUST-NEVER-BE-SERVED"

PILE = """# The pile

How the NES keeps its sprites.

## Sprite zero

```python
def hit(y: int) -> bool:
    return y == 0
```

| reg | use |
|-----|-----|
| $2000 | PPUCTRL |
"""

PIECES = {
    "pieces": [
        {
            "key": "halfphi",
            "name": "halfphi",
            "what": "A Rust crate for half-step phase arithmetic.",
            "source": "https://github.com/tinymachines/halfphi",
            "ships_as": "crate",
            "code_licence": "MIT",
            "data_terms": "none: embeds no die data",
            "public_url": None,
            "not_hosted_because": "a crate is a dependency, not a running service",
        },
        {
            "key": "explorer",
            "name": "the 6502 info site",
            "what": "Pages about the 6502 die.",
            "source": "https://github.com/tinymachines/6502",
            "ships_as": "site",
            "code_licence": "MIT",
            "data_terms": "CC BY-NC-SA 3.0",
            "public_url": "https://6502.tinymachines.ai",
            "not_hosted_because": None,
        },
    ]
}


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def checkout(tmp_path: Path, settings: Any) -> Path:
    root = tmp_path / "checkout"
    write(root, "docs/index.md", "# Notes\n\nThe notebook.\n")
    write(root, "docs/nes/index.md", "# NES\n\nThe NES section.\n")
    write(root, "docs/nes/pile.md", PILE)
    write(root, "docs/nes/alone.md", "# Alone\n\nOnly in English.\n")
    write(root, "docs/README.md", "# Readme\n")
    write(root, "docs/_draft.md", "# Draft\n")
    write(root, "docs/styles/x.md", "# Style\n")
    write(root, "docs/ja/nes/index.md", "# NES（日本語）\n\nNES の節。\n")
    write(root, "docs/ja/nes/pile.md", "# 山\n\nスプライトの話。\n\n## スプライト・ゼロ\n")
    write(root, "data/pieces.json", json.dumps(PIECES))
    write(root, "settings.md", f"# {SECRET}\n")
    write(root, "secret.txt", SECRET)
    write(root, "docs.md", f"# {SECRET}\n")
    settings.TM_CHECKOUT = root
    return root


@pytest.fixture
def put(checkout: Path) -> Callable[[str, str], Path]:
    """Write a file into the checkout."""
    return lambda rel, text: write(checkout, rel, text)


@pytest.fixture
def secret() -> str:
    """The text of the files outside docs/."""
    return SECRET
