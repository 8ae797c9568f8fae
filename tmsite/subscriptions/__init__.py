"""Subscriptions: a client is told when what it read changes.

Change sources publish on the bus (:mod:`tmsite.bus`) and streams listen to it; ``listen``
checks a 2026-07-28 ``subscriptions/listen`` and ``stream`` holds its event stream in the ASGI
server's loop; ``stdio_stream`` holds both eras over stdio; ``sources`` wires each mount's
change sources (its ``change_sources`` hook) and starts the search keeper with them. The
2025-11-25 era: ``subscribe`` answers
``resources/subscribe`` and ``unsubscribe`` of a session; over HTTP ``sessions`` issues and
checks the signed session ids, ``sessionstream`` holds the session's GET stream, and ``models``
is what they share between machines.

Spec: SUB1, SUB2, SUB3.
"""
