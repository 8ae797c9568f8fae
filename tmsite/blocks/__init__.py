"""Blocks: every address of the namespace as an ordered list from a closed vocabulary.

``vocabulary`` names the thirteen block kinds and builds them; ``schema`` is their JSON Schema;
``registry`` maps a kind of thing (or a media type, or a mount) to its assembler, loudly
refusing a clash; ``assemble`` is the ``?as=blocks`` read. The framework imports only the core.
The generic fallbacks and the core kinds below register themselves on import; a mount's own
assemblers live in its package (``tmsite.mounts.<kind>.blocks``) and are found at start-up by
the mount registry (``tmsite.mounts.registry.discover_blocks``), never listed here.
"""

from tmsite.blocks import core, generic  # noqa: F401  (they register themselves)
