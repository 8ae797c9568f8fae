"""A line diff shaped as git's xdiff shapes it, for blame.

Myers' O(ND) algorithm finds a shortest edit script between two versions of a file (lines
interned as integers first, so a comparison is an integer's); the changed lines of each side
are then *compacted* as xdiff's ``xdl_change_compact`` does: each group of changes is slid up
and then down as far as equal lines allow, merging with groups it meets, and left at the
lowest place — or, where it can line up with a group of changes in the other version, at the
last such place. Ambiguous edits (a block that begins or ends with a line that repeats, such as
a blank line or a brace) are thereby placed where git places them, so blame hands the same lines
to the parent. git's blame also applies ``diff.indentHeuristic`` to a group that could slide
without meeting a change on the other side; this module does not, and leaves such a group at
its lowest place.

Spec: ANY2.
"""

from __future__ import annotations

#: Past this many edits the script is not searched; the caller uses another matcher.
MAX_EDITS = 2000


def edit_flags(old: list[bytes], new: list[bytes]) -> tuple[list[bool], list[bool]] | None:
    """For each line of ``old`` and of ``new``, whether it is changed (deleted or inserted).

    None when the versions differ by more than :data:`MAX_EDITS` edits.
    """
    ids: dict[bytes, int] = {}
    a = [ids.setdefault(line, len(ids)) for line in old]
    b = [ids.setdefault(line, len(ids)) for line in new]
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    path = _myers(a[head : len(a) - tail], b[head : len(b) - tail])
    if path is None:
        return None
    gone = [False] * head + [True] * (len(a) - head - tail) + [False] * tail
    added = [False] * head + [True] * (len(b) - head - tail) + [False] * tail
    for i, j in path:
        gone[head + i] = False
        added[head + j] = False
    _compact(a, gone, added)
    _compact(b, added, gone)
    return gone, added


def _myers(a: list[int], b: list[int]) -> list[tuple[int, int]] | None:
    """The matched pairs ``(i, j)`` of a shortest edit script (Myers' greedy, with a trace)."""
    n, m = len(a), len(b)
    offset = n + m + 1
    v = [0] * (2 * offset + 1)
    trace: list[list[int]] = []
    for d in range(min(n + m, MAX_EDITS) + 1):
        trace.append(v[offset - d : offset + d + 1] if d else [v[offset]])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _back(trace, v, offset, d, k, a, b)
    return None


def _back(
    trace: list[list[int]], v: list[int], offset: int, d: int, k: int, a: list[int], b: list[int]
) -> list[tuple[int, int]]:
    """Walk the trace back from the end, collecting the diagonal (matched) steps."""
    pairs: list[tuple[int, int]] = []
    x, y = len(a), len(b)
    for depth in range(d, 0, -1):
        before = trace[depth]  # v as it was when round ``depth`` began, indexed -depth..depth
        k = x - y

        def at(diagonal: int, before: list[int] = before, depth: int = depth) -> int:
            return before[diagonal + depth]

        if k == -depth or (k != depth and at(k - 1) < at(k + 1)):
            prev_k = k + 1
            prev_x = at(prev_k)
            prev_y = prev_x - prev_k
            start_x, start_y = prev_x, prev_y + 1
        else:
            prev_k = k - 1
            prev_x = at(prev_k)
            prev_y = prev_x - prev_k
            start_x, start_y = prev_x + 1, prev_y
        while x > start_x and y > start_y:
            x -= 1
            y -= 1
            pairs.append((x, y))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        pairs.append((x, y))
    return pairs


class _Group:
    """xdiff's ``struct xdlgroup``: the run of changed lines ``start:end`` in one version."""

    def __init__(self, flags: list[bool], recs: list[int] | None = None) -> None:
        self.flags = flags
        self.recs = recs
        self.start = 0
        self.end = self._end_from(0)

    def _end_from(self, at: int) -> int:
        flags, size = self.flags, len(self.flags)
        while at < size and flags[at]:
            at += 1
        return at

    def next(self) -> bool:
        """Move to the next group; False at the end (``group_next``)."""
        if self.end == len(self.flags):
            return False
        self.start = self.end + 1
        self.end = self._end_from(self.start)
        return True

    def previous(self) -> None:
        """Move to the previous group (``group_previous``)."""
        self.end = self.start - 1
        self.start = self.end
        while self.start > 0 and self.flags[self.start - 1]:
            self.start -= 1

    def slide_up(self) -> bool:
        """Shift the group up one line if the lines allow, merging (``group_slide_up``)."""
        recs, flags = self.recs, self.flags
        assert recs is not None
        if self.start > 0 and recs[self.start - 1] == recs[self.end - 1]:
            self.start -= 1
            self.end -= 1
            flags[self.start] = True
            flags[self.end] = False
            while self.start > 0 and flags[self.start - 1]:
                self.start -= 1
            return True
        return False

    def slide_down(self) -> bool:
        """Shift the group down one line if the lines allow, merging (``group_slide_down``)."""
        recs, flags = self.recs, self.flags
        assert recs is not None
        if self.end < len(flags) and recs[self.start] == recs[self.end]:
            flags[self.start] = False
            flags[self.end] = True
            self.start += 1
            self.end = self._end_from(self.end + 1)
            return True
        return False


def _compact(recs: list[int], changed: list[bool], other: list[bool]) -> None:
    """``xdl_change_compact`` on one side: slide each group of changes as git does."""
    g = _Group(changed, recs)
    go = _Group(other)
    while True:
        if g.end != g.start:
            _place(g, go)
        if not g.next():
            break
        go.next()


def _place(g: _Group, go: _Group) -> None:
    """Slide one group up, then down as far as it goes, then back up to the last place.

    The last place is where it lines up with a group of changes on the other side, if it
    met one; else it stays at its lowest.
    """
    while True:
        size = g.end - g.start
        end_matching_other = -1
        while g.slide_up():
            go.previous()
        earliest_end = g.end
        if go.end > go.start:
            end_matching_other = g.end
        while g.slide_down():
            go.next()
            if go.end > go.start:
                end_matching_other = g.end
        if size == g.end - g.start:
            break
    if g.end != earliest_end and end_matching_other != -1:
        while go.end == go.start:
            g.slide_up()
            go.previous()
