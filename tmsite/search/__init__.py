"""Search: the things the mounts offer, found by what they say.

Spec: SRCH1, SRCH2.
"""
