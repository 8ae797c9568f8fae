"""Trails: named, ordered walks through the namespace, kept as ``notes/trails/<name>.json``.

:mod:`tmsite.trails.index` parses the files and keeps the reverse index (step → trails) in the
database; :mod:`tmsite.mounts.trail.checks` reports trail files that do not parse and steps that do
not resolve. The ``trail`` mount (:mod:`tmsite.mounts.trail.mount`) serves them.
"""
