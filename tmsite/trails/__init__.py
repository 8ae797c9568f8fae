"""Trails: named, ordered walks through the namespace, kept as ``notes/trails/<name>.json``.

:mod:`tmsite.trails.index` parses the files, lays the maintainers' corrections over them (the
trails as served) and keeps the reverse index (step → trails) in the database;
:mod:`tmsite.trails.models` holds the corrections, :mod:`tmsite.trails.corrections` makes and
exports them, :mod:`tmsite.trails.admin` is where maintainers make them;
:mod:`tmsite.mounts.trail.checks` reports trail files that do not parse and steps that do not
resolve. The ``trail`` mount (:mod:`tmsite.mounts.trail.mount`) serves them.
"""
