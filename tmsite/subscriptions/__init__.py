"""Subscriptions: a client is told when what it read changes.

``changes`` is the bus change sources publish on and streams listen to.

Spec: SUB1, SUB2, SUB3.
"""
