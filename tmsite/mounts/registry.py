"""The mounts this box serves: one sorted line per kind, instances from settings.

``TM_MOUNTS`` may narrow the list (tests do); a name in it that is not a mount fails loudly at
start-up (system check ``tm.E001``), as does a registry line whose class is not the mount it
names (``mount_class`` asserts it when the checks import every mount).

Spec: NS1, BLOCKS.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from importlib import import_module
from importlib.util import find_spec

from django.conf import settings
from django.core import checks

from tmsite.blocks.assemble import assemble as assemble_blocks
from tmsite.check_registry import check
from tmsite.core.types import FacetAssembler
from tmsite.mounts.base import Mount
from tmsite.mounts.namespace import Namespace
from tmsite.search import answer as searches

#: name → "module:Class". Keep sorted; one line per mount.
MOUNTS: dict[str, str] = {
    "entity": "tmsite.mounts.entity.mount:EntityMount",
    "fs": "tmsite.mounts.fs.mount:FsMount",
    "git": "tmsite.mounts.git.mount:GitMount",
    "http": "tmsite.mounts.http.mount:HttpMount",
    "kinds": "tmsite.mounts.kinds.mount:KindsMount",
    "manifest": "tmsite.mounts.manifest.mount:ManifestMount",
    "mcp": "tmsite.mounts.mcp.mount:McpMount",
    "offbox": "tmsite.mounts.offbox.mount:OffboxMount",
    "proposals": "tmsite.mounts.proposals.mount:ProposalsMount",
    "renderers": "tmsite.mounts.renderers.mount:RenderersMount",
    "trail": "tmsite.mounts.trail.mount:TrailMount",
}
assert list(MOUNTS) == sorted(MOUNTS), "keep the registry sorted"


def mount_class(name: str) -> type[Mount]:
    """The class the registry line ``name`` names, imported on first use.

    It must be a ``Mount`` whose ``name`` is ``name``: the assertion is what the start-up
    checks rely on to catch a registry line pointing at the wrong class.
    """
    module_name, _, class_name = MOUNTS[name].partition(":")
    cls: type[Mount] = getattr(import_module(module_name), class_name)
    assert issubclass(cls, Mount) and cls.name == name, f"{MOUNTS[name]} is not the {name} mount"
    return cls


def discover_blocks() -> None:
    """Import each registered mount's assemblers, ``tmsite.mounts.<kind>.blocks``, if it has them.

    An assembler module registers itself on import (``tmsite.blocks.registry.assembles``) and
    the blocks framework never imports a mount, so the registry finds them, as Django's
    ``autodiscover_modules("admin")`` finds each app's ``admin``. Every registered mount's (and
    the memory mount's), served or not, so what the manifest publishes does not depend on
    ``TM_MOUNTS``. Run once at start-up (``TmsiteConfig.ready``); importing twice is a no-op.
    """
    modules = [MOUNTS[name].partition(":")[0] for name in MOUNTS]
    for module in [*modules, "tmsite.mounts.memory.mount"]:
        blocks = f"{module.rpartition('.')[0]}.blocks"
        if find_spec(blocks) is not None:
            import_module(blocks)


def enabled_names() -> list[str]:
    """The mounts to serve: ``TM_MOUNTS``, sorted, when it is set; else every registered one."""
    wanted = getattr(settings, "TM_MOUNTS", None)
    return sorted(wanted) if wanted is not None else list(MOUNTS)


def build_mount(name: str, host: str) -> Mount:
    """A mount instance configured from settings (its ``from_settings`` hook, if any)."""
    cls = mount_class(name)
    factory = getattr(cls, "from_settings", None)
    mount: Mount = factory(host) if factory is not None else cls(host)
    return mount


#: The facets the namespace answers for any address, whatever its mount.
ASSEMBLERS: dict[str, FacetAssembler] = {"blocks": assemble_blocks, "search": searches.facet}
#: Those of them that need parameters of their own (``q``): not named in a refusal's ``valid``.
UNLISTED = frozenset({"search"})


def wire(mounts: Mapping[str, Mount]) -> None:
    """Hand the mounts what they take from each other, when both are served.

    fs and git: git reads fs's files at a revision (``fs/…?at=``, fs's ``history_at``) and links
    a repository's files to their working copies, by fs's roots. http: the page links into fs
    and git are offered only when those are served. A mount never looks another up.
    """
    fs, git, http = mounts.get("fs"), mounts.get("git"), mounts.get("http")
    if fs is not None:
        from tmsite.mounts.fs.mount import FsMount

        assert isinstance(fs, FsMount)
    if git is not None:
        from tmsite.mounts.git.mount import GitMount

        assert isinstance(git, GitMount)
        git.checkout_files = fs.files if fs is not None else None
        if fs is not None:
            fs.history_at = git.read_checkout_at
    if http is not None:
        from tmsite.mounts.http.mount import HttpMount

        assert isinstance(http, HttpMount)
        http.fs_roots = frozenset(fs.roots) if fs is not None else frozenset()
        http.git_served = git is not None


def compose(host: str, mounts: Mapping[str, Mount]) -> Namespace:
    """A namespace of ``mounts``, wired to each other (:func:`wire`)."""
    wire(mounts)
    return Namespace(host, mounts, ASSEMBLERS, UNLISTED)


@check
def check_enabled_mounts() -> list[checks.CheckMessage]:
    """``tm.E001``: ``TM_MOUNTS`` names only registered mounts."""
    wanted = getattr(settings, "TM_MOUNTS", None)
    if wanted is None:
        return []
    if isinstance(wanted, str) or not all(isinstance(name, str) for name in wanted):
        return [checks.Error("TM_MOUNTS must be a list of mount names", id="tm.E001")]
    return [
        checks.Error(
            f"TM_MOUNTS names {name!r}, which is not a mount",
            hint=f"the mounts are {', '.join(MOUNTS)}",
            id="tm.E001",
        )
        for name in wanted
        if name not in MOUNTS
    ]


_built: Namespace | None = None
_lock = threading.Lock()


def namespace() -> Namespace:
    """The process's namespace, built once from settings (once, even under threads)."""
    global _built
    built = _built
    if built is not None:
        return built
    with _lock:
        if _built is None:
            host = settings.TM_HOST
            _built = compose(host, {name: build_mount(name, host) for name in enabled_names()})
        return _built


def reset() -> None:
    """Forget the built namespace (settings changed; tests)."""
    global _built
    with _lock:
        _built = None
