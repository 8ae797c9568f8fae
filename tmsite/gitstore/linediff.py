"""A line diff shaped as git's xdiff shapes it, for blame.

Myers' O(ND) algorithm finds a shortest edit script between two versions of a file (lines
compared as they are: each blob's lines are split once and kept, so a line's hash is computed
once; the common head and tail, and, as xdiff discards them, the lines the other side does not
hold at all are left out of the search).
Past :data:`MAX_EDITS` edits, where Myers' search in Python grows quadratic, rapidfuzz's
bit-parallel longest common subsequence (C++) gives a script of the same length instead.
The changed lines of each side are then *compacted* as xdiff's ``xdl_change_compact`` does: each
group of changes is slid up and then down as far as equal lines allow, merging with groups it
meets, and left where it lines up with a group of changes in the other version, or else where
git's indent heuristic (``diff.indentHeuristic``, on by default, which ``git blame`` uses)
scores the split best. Ambiguous edits (a block that begins or ends with a line that repeats,
such as a blank line or a brace) are thereby placed where git places them, so blame hands the
same lines to the parent.

Spec: ANY2.
"""

from __future__ import annotations

import itertools
import operator
from itertools import compress

from rapidfuzz.distance import Indel

#: Past this many edits Myers' search (quadratic in them, in Python) gives way to a longest
#: common subsequence found in C (:func:`_lcs_edits`).
MAX_EDITS = 500
#: Past this many cells (lines of one side times the other's) no alignment is sought at all;
#: the caller uses another matcher.
MAX_CELLS = 1 << 26


#: Where a side's changed lines lie: every one of them is in ``range(*span)``.
Span = tuple[int, int]


def edit_flags(old: list[bytes], new: list[bytes]) -> tuple[list[bool], list[bool]] | None:
    """For each line of ``old`` and of ``new``, whether it is changed (deleted or inserted).

    None when the versions are too large to align (:data:`MAX_CELLS`).
    """
    found = edit_spans(old, new)
    return None if found is None else (found[0], found[1])


def edit_spans(
    old: list[bytes], new: list[bytes]
) -> tuple[list[bool], list[bool], Span, Span] | None:
    """:func:`edit_flags`, with the span of each side's changed lines.

    The flags are looked through only between the spans (the lines both sides share at the
    head and the tail are not), so a small edit to a long file costs little past finding them.
    """
    a, b = old, new  # xdiff's names for the two sides
    limit = min(len(a), len(b))
    head = common_head(a, b, limit)
    tail = common_tail(a, b, limit - head)
    # As xdiff's xdl_cleanup_records: a line the other side lacks is changed for certain and
    # left out of the search, which then only places the lines both sides hold.
    mid_a = a[head : len(a) - tail]
    mid_b = b[head : len(b) - tail]
    held_a = list(map(set(mid_b).__contains__, mid_a))
    held_b = list(map(set(mid_a).__contains__, mid_b))
    kept_a, kept_b = list(compress(mid_a, held_a)), list(compress(mid_b, held_b))
    edits = _myers(kept_a, kept_b)
    if edits is None:
        if len(kept_a) * len(kept_b) > MAX_CELLS:
            return None
        ids: dict[bytes, int] = {}  # rapidfuzz would compare hashes: number the lines
        number = itertools.count()
        edits = _lcs_edits(
            list(map(ids.setdefault, kept_a, number)), list(map(ids.setdefault, kept_b, number))
        )
    gone = [False] * len(a)
    gone[head : len(a) - tail] = map(operator.not_, held_a)
    added = [False] * len(b)
    added[head : len(b) - tail] = map(operator.not_, held_b)
    deleted, inserted = edits
    if deleted:
        keep_a = list(compress(range(head, len(a) - tail), held_a))
        for i in deleted:
            gone[keep_a[i]] = True
    if inserted:
        keep_b = list(compress(range(head, len(b) - tail), held_b))
        for j in inserted:
            added[keep_b[j]] = True
    span_a = _compact(a, gone, added, _Indents(old), (head, len(a) - tail), (head, len(b) - tail))
    span_b = _compact(b, added, gone, _Indents(new), (head, len(b) - tail), span_a)
    return gone, added, span_a, span_b


def common_head(a: list[bytes], b: list[bytes], limit: int) -> int:
    """How many leading items ``a`` and ``b`` share, at most ``limit``."""
    return _shared(a, b, limit, from_end=False)


def common_tail(a: list[bytes], b: list[bytes], limit: int) -> int:
    """How many trailing items ``a`` and ``b`` share, at most ``limit``."""
    return _shared(a, b, limit, from_end=True)


def _shared(a: list[bytes], b: list[bytes], limit: int, from_end: bool) -> int:
    """How many items ``a`` and ``b`` share at one end, at most ``limit``.

    Slices are compared (in C), growing while they match, then halving around the first
    difference, so a long common run costs a few comparisons rather than a step a line.
    """
    at, step, grow = 0, 16, True
    end_a, end_b = len(a), len(b)
    while step:
        size = min(step, limit - at)
        if not size:
            break
        if from_end:
            same = a[end_a - at - size : end_a - at] == b[end_b - at - size : end_b - at]
        else:
            same = a[at : at + size] == b[at : at + size]
        if same:
            at += size
            step = step * 2 if grow else step // 2
        else:
            grow = False
            step //= 2
    return at


def _myers(a: list[bytes], b: list[bytes]) -> tuple[list[int], list[int]] | None:
    """A shortest edit script (Myers' greedy, with a trace): the deleted ``i``, inserted ``j``."""
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
            if x < n and y < m and a[x] == b[y]:  # most diagonals stop at once: no call
                x = _snake(a, b, x, y)
                y = x - k
            v[offset + k] = x
            if x >= n and y >= m:
                return _back(trace, d, len(a), len(b))
    return None


def _lcs_edits(a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
    """A shortest script of deletions and insertions by rapidfuzz's bit-parallel LCS.

    As long as Myers' (both are shortest), though where several exist it may keep other
    matches; compaction then slides the groups where git puts them.
    """
    deleted: list[int] = []
    inserted: list[int] = []
    for op in Indel.editops(a, b):
        if op.tag == "delete":
            deleted.append(op.src_pos)
        else:
            inserted.append(op.dest_pos)
    return deleted, inserted


def _snake(a: list[bytes], b: list[bytes], x: int, y: int) -> int:
    """How far the diagonal from ``(x, y)`` runs on equal lines: the ``x`` where it stops.

    Whole slices are compared first (in C), doubling while they match, so a long run of
    unchanged lines costs a few comparisons rather than one Python step a line.
    """
    n, m = len(a), len(b)
    if x >= n or y >= m or a[x] != b[y]:
        return x
    step = 8
    while x < n and y < m:
        size = min(step, n - x, m - y)
        if a[x : x + size] == b[y : y + size]:
            x += size
            y += size
            step *= 2
            continue
        while x < n and y < m and a[x] == b[y]:
            x += 1
            y += 1
        break
    return x


def _back(trace: list[list[int]], d: int, x: int, y: int) -> tuple[list[int], list[int]]:
    """Walk the trace back from the end ``(x, y)``: one edit a round, diagonals skipped."""
    deleted: list[int] = []
    inserted: list[int] = []
    for depth in range(d, 0, -1):
        before = trace[depth]  # v as it was when round ``depth`` began, indexed -depth..depth
        k = x - y
        if k == -depth or (k != depth and before[k - 1 + depth] < before[k + 1 + depth]):
            x = before[k + 1 + depth]
            y = x - k - 1
            inserted.append(y)
        else:
            x = before[k - 1 + depth]
            y = x - k + 1
            deleted.append(x)
    return deleted, inserted


class _Group:
    """xdiff's ``struct xdlgroup`` on the side being compacted: changed lines ``start:end``."""

    def __init__(self, flags: list[bool], recs: list[bytes], start: int) -> None:
        self.flags = flags
        self.recs = recs
        self.start = start
        self.end = self._end_from(start)

    def _end_from(self, at: int) -> int:
        flags, size = self.flags, len(self.flags)
        while at < size and flags[at]:
            at += 1
        return at

    def slide_up(self) -> bool:
        """Shift the group up one line if the lines allow, merging (``group_slide_up``)."""
        recs, flags = self.recs, self.flags
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
        if self.end < len(flags) and recs[self.start] == recs[self.end]:
            flags[self.start] = False
            flags[self.end] = True
            self.start += 1
            self.end = self._end_from(self.end + 1)
            return True
        return False


class _Other:
    """The other side's group in step with the one compacted.

    It is the ``index``-th run of changed lines (between the side's ``index``-th unchanged
    line and the next), which compacting this side never alters.
    """

    def __init__(self, flags: list[bool], span: Span) -> None:
        # The indexes of the groups holding changes: a run of changes starting at ``start``
        # is the group after ``start - changed_before`` unchanged lines.
        self.filled: set[int] = set()
        changed_before, end = 0, span[0]
        while True:
            try:
                start = flags.index(True, end, span[1])
            except ValueError:
                break
            try:
                end = flags.index(False, start, span[1])
            except ValueError:
                end = span[1]
            self.filled.add(start - changed_before)
            changed_before += end - start
        self.index = 0

    def empty(self) -> bool:
        """Whether the group holds no changed line."""
        return self.index not in self.filled


def _compact(
    recs: list[bytes],
    changed: list[bool],
    other: list[bool],
    indents: _Indents,
    span: Span,
    other_span: Span,
) -> Span:
    """``xdl_change_compact`` on one side: slide each group of changes as git does.

    Groups are paired with the other side's by their index (the count of unchanged lines
    before them); empty groups are stepped over in one move rather than one at a time.
    ``span`` and ``other_span`` hold each side's changed lines; returned is the span this
    side's hold once slid.
    """
    go = _Other(other, other_span)
    end, index = -1, -1
    low, high = len(changed), 0
    while True:
        try:
            start = changed.index(True, max(end + 1, span[0]), span[1])
        except ValueError:
            return (low, high) if low < high else (0, 0)
        index += start - end
        go.index = index
        g = _Group(changed, recs, start)
        _place(g, go, indents)
        end, index = g.end, go.index
        low, high = min(low, g.start), max(high, g.end)


def _place(g: _Group, go: _Other, indents: _Indents) -> None:
    """Slide one group up, then down as far as it goes, then back up to the last place.

    The last place is where it lines up with a group of changes on the other side, if it
    met one; else where git's indent heuristic puts it.
    """
    while True:
        size = g.end - g.start
        end_matching_other = -1
        while g.slide_up():
            go.index -= 1
        earliest_end = g.end
        if not go.empty():
            end_matching_other = g.end
        while g.slide_down():
            go.index += 1
            if not go.empty():
                end_matching_other = g.end
        if size == g.end - g.start:
            break
    if g.end != earliest_end:
        _settle(g, go, indents, earliest_end, end_matching_other != -1, size)


def _settle(
    g: _Group, go: _Other, indents: _Indents, earliest_end: int, matched: bool, size: int
) -> None:
    """Slide a group at its lowest back up: to the other side's last group, or by indent."""
    if matched:
        while go.empty():
            g.slide_up()
            go.index -= 1
        return
    best = indents.best_shift(earliest_end, g.end, size)
    while g.end > best:
        g.slide_up()
        go.index -= 1


#: The indent heuristic's weights (xdiff's ``xdiffi.c``, from diff-slider-tools' corpus).
MAX_INDENT = 200
MAX_BLANKS = 20
START_OF_FILE_PENALTY = 1
END_OF_FILE_PENALTY = 21
TOTAL_BLANK_WEIGHT = -30
POST_BLANK_WEIGHT = 6
RELATIVE_INDENT_PENALTY = -4
RELATIVE_INDENT_WITH_BLANK_PENALTY = 10
RELATIVE_OUTDENT_PENALTY = 24
RELATIVE_OUTDENT_WITH_BLANK_PENALTY = 17
RELATIVE_DEDENT_PENALTY = 23
RELATIVE_DEDENT_WITH_BLANK_PENALTY = 17
INDENT_WEIGHT = 60
MAX_SLIDING = 100
SPACES = b" \t\n\v\f\r"


class _Indents:
    """git's indent heuristic (``diff.indentHeuristic``, on by default).

    Where a group that could slide meets no change on the other side, it goes where the
    splits above and below it fall best by indentation and blank lines.
    """

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.known: dict[int, int] = {}

    def indent(self, at: int) -> int:
        """The line's indentation (a tab to the next multiple of 8), -1 for a blank line."""
        found = self.known.get(at)
        if found is not None:
            return found
        width = 0
        for byte in self.lines[at]:
            if byte not in SPACES:
                break
            if byte == 0x20:
                width += 1
            elif byte == 0x09:
                width += 8 - width % 8
            if width >= MAX_INDENT:
                width = MAX_INDENT
                break
        else:
            width = -1
        self.known[at] = width
        return width

    def measure(self, split: int) -> tuple[bool, int, int, int, int, int]:
        """``measure_split``: end of file, indent, blanks and indents around the split."""
        size = len(self.lines)
        end_of_file = split >= size
        indent = -1 if end_of_file else self.indent(split)
        pre_blank, pre_indent = 0, -1
        for at in range(split - 1, -1, -1):
            pre_indent = self.indent(at)
            if pre_indent != -1:
                break
            pre_blank += 1
            if pre_blank == MAX_BLANKS:
                pre_indent = 0
                break
        post_blank, post_indent = 0, -1
        for at in range(split + 1, size):
            post_indent = self.indent(at)
            if post_indent != -1:
                break
            post_blank += 1
            if post_blank == MAX_BLANKS:
                post_indent = 0
                break
        return end_of_file, indent, pre_blank, pre_indent, post_blank, post_indent

    def score(self, split: int) -> tuple[int, int]:
        """``score_add_split``: (effective indent, penalty) of one split."""
        end_of_file, indent, pre_blank, pre_indent, post_blank_after, post_indent = self.measure(
            split
        )
        penalty = 0
        if pre_indent == -1 and pre_blank == 0:
            penalty += START_OF_FILE_PENALTY
        if end_of_file:
            penalty += END_OF_FILE_PENALTY
        post_blank = 1 + post_blank_after if indent == -1 else 0
        total_blank = pre_blank + post_blank
        penalty += TOTAL_BLANK_WEIGHT * total_blank + POST_BLANK_WEIGHT * post_blank
        effective = indent if indent != -1 else post_indent
        blanks = total_blank != 0
        if effective == -1 or pre_indent == -1 or effective == pre_indent:
            pass
        elif effective > pre_indent:
            penalty += RELATIVE_INDENT_WITH_BLANK_PENALTY if blanks else RELATIVE_INDENT_PENALTY
        elif post_indent != -1 and post_indent > effective:
            penalty += RELATIVE_OUTDENT_WITH_BLANK_PENALTY if blanks else RELATIVE_OUTDENT_PENALTY
        else:
            penalty += RELATIVE_DEDENT_WITH_BLANK_PENALTY if blanks else RELATIVE_DEDENT_PENALTY
        return effective, penalty

    def best_shift(self, earliest_end: int, end: int, size: int) -> int:
        """The group's best end among the places it can slide to (the lowest of the best)."""
        best_shift = -1
        best = (0, 0)
        for shift in range(max(earliest_end, end - size - 1, end - MAX_SLIDING), end + 1):
            one, two = self.score(shift), self.score(shift - size)
            score = (one[0] + two[0], one[1] + two[1])
            if best_shift == -1 or _compare(score, best) <= 0:
                best, best_shift = score, shift
        return best_shift


def _compare(one: tuple[int, int], two: tuple[int, int]) -> int:
    """``score_cmp``: negative when ``one`` is the better split."""
    indents = (one[0] > two[0]) - (one[0] < two[0])
    return INDENT_WEIGHT * indents + one[1] - two[1]
