"""The mounts: one package per backend under ``tm://<host>/<name>/``.

Beside them, the contract they share (:mod:`.base`), the namespace that serves them together
(:mod:`.namespace`) and the registry of those this box serves (:mod:`.registry`).
"""
