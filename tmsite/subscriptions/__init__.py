"""Subscriptions: a client is told when what it read changes.

``changes`` is the bus change sources publish on and streams listen to; ``listen`` checks a
2026-07-28 ``subscriptions/listen`` and ``stream`` holds its event stream in the ASGI server's
loop; ``subscribe`` answers the 2025-11-25 ``resources/subscribe``/``unsubscribe`` of a session;
``stdio_stream`` holds both eras over stdio; ``fswatch`` is the fs mount's change source;
``delivery`` says where streams are served.

Spec: SUB1, SUB2, SUB3.
"""
