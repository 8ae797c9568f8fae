"""Proposals: what a client wishes the namespace had, held until a maintainer decides.

Nothing a client proposes lands by itself. :mod:`tmsite.operations.intake` checks a proposal
(its kind, its text, its addresses against the namespace, the caller's daily cap and the
queue's), prepares the change a maintainer would make and keeps it as one
:class:`~tmsite.proposals.models.Proposal` (identical proposals are one, with a count);
:mod:`tmsite.operations.decide` applies an approved change in one transaction through the
paths maintainers' own corrections take; :mod:`tmsite.proposals.admin` is the queue. The
``proposals`` mount serves a proposer's receipt and the decided proposals, and carries the
curated links every read of their ends gets. Nothing about the proposer is stored but, on the
UTC day a proposal is made, the day's keyed hash of its caller, which shares the full queue
between callers and is blanked once the day is over.

Spec: PROP1, PROP2, PROP3.
"""
