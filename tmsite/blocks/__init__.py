"""Blocks: every address of the namespace as an ordered list from a closed vocabulary.

``vocabulary`` names the thirteen block kinds and builds them; ``schema`` is their JSON Schema;
``registry`` maps a kind of thing (or a media type, or a mount) to its assembler, loudly
refusing a clash;
``assemble`` is the ``?as=blocks`` read. The assembler modules below register themselves on
import: the generic fallbacks, the core kinds, and one module per mount that needs its own.
"""

from tmsite.blocks import (  # noqa: F401  (they register themselves)
    core,
    entity,
    generic,
    git,
    http,
    manifest,
    mcp,
    offbox,
    trail,
)
