"""Subscriptions: what a client listens to, and what tells it that something changed.

``sources`` wires each mount's change sources (its ``change_sources`` hook) to the bus
(:mod:`tmsite.bus`) and starts the search keeper with them; ``records`` and ``lists`` are the
watchers they are built from. For the 2025-11-25 era, ``sessions`` issues and checks the signed
session ids, and ``models`` is what sessions, their subscriptions and their streams' events
share between machines. The methods and the streams that tell a client are
:mod:`tmsite.streams`.

Spec: SUB1, SUB2, SUB3.
"""
