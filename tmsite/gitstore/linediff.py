"""A line diff shaped as git's xdiff shapes it, for blame.

Myers' O(ND) algorithm finds a shortest edit script between two versions of a file (lines
compared as they are; the common head and tail, measured in bytes and never split into lines,
and, as xdiff discards them, the lines the other side does not hold at all are left out of
the search).
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

import bisect
import itertools
import operator
from collections import Counter
from itertools import compress

from rapidfuzz.distance import Indel

#: Past this many edits Myers' search (quadratic in them, in Python) gives way to a longest
#: common subsequence found in C (:func:`_lcs_edits`).
MAX_EDITS = 500
#: Lacked lines up to which they are found one by one and stepped over by slicing.
FEW_LACKED = 64
#: The round at which Myers' search counts lines (:func:`_fewest_edits`) and gives up at
#: once if the script must pass :data:`MAX_EDITS`, before its rounds grow costly.
BOUND_ROUND = 128
#: Past this many cells (lines of one side times the other's) no alignment is sought at all;
#: the caller uses another matcher.
MAX_CELLS = 1 << 26


#: Where a side's changed lines lie: every one of them is in ``range(*span)``.
Span = tuple[int, int]
#: A flag a line, 1 or 0 (searched with ``find``, which is ``memchr``).
Flags = bytes | bytearray


class Text:
    r"""One version of a file as the diff reads it: its bytes, split into lines where read.

    Lines are as git counts them (split on ``\n`` only, a final unterminated line included);
    the bytes are kept ending in a newline so that every line ends alike. Two versions a diff
    compares share most lines at the head and the tail: those are measured by comparing bytes
    (in C) and never split, and only the lines between them become objects.
    """

    __slots__ = ("_count", "data")

    def __init__(self, data: bytes) -> None:
        if data and not data.endswith(b"\n"):
            data += b"\n"
        self.data = data
        self._count = -1  # counted when first asked, or learnt from a diff

    @property
    def count(self) -> int:
        """How many lines it has."""
        if self._count < 0:
            self._count = self.data.count(b"\n")
        return self._count

    @classmethod
    def of(cls, lines: list[bytes]) -> Text:
        """The text of ``lines`` (none holding a newline)."""
        return cls(b"".join(line + b"\n" for line in lines))

    def lines(self) -> list[bytes]:
        """Every line, split."""
        return self.data.split(b"\n")[:-1]

    def between(self, start: int, end: int) -> list[bytes]:
        """The lines whose bytes are ``data[start:end]`` (both ends at a line's start)."""
        return self.data[start:end].split(b"\n")[:-1]


class _Side:
    """One side of a diff as compaction reads it: ``recs[i]``, line ``i`` of the version.

    The lines between the common head and tail are split; one outside them (a group of
    changes slid into the head or the tail) is cut from the bytes when read, walking out from
    the nearest known line start.
    """

    __slots__ = ("_down", "_up", "data", "head", "mid", "size", "tail_line")

    def __init__(self, text: Text, head: int, start: int, mid: list[bytes], end: int) -> None:
        self.data = text.data
        self.size = text.count  # known from the diff: not counted again
        self.head = head
        self.mid = mid
        self.tail_line = head + len(mid)
        self._up = [start]  # the starts of lines head, head - 1, ...
        self._down = [end]  # the starts of lines tail_line, tail_line + 1, ...

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, at: int) -> bytes:
        if self.head <= at < self.tail_line:
            return self.mid[at - self.head]
        data = self.data
        if at < self.head:
            up, back = self._up, self.head - at
            while len(up) <= back:
                up.append(data.rfind(b"\n", 0, up[-1] - 1) + 1)
            return data[up[back] : up[back - 1] - 1]
        down, ahead = self._down, at - self.tail_line
        while len(down) <= ahead + 1:
            down.append(data.index(b"\n", down[-1]) + 1)
        return data[down[ahead] : down[ahead + 1] - 1]


def _shared_bytes(a: bytes, b: bytes, limit: int, from_end: bool) -> int:
    """How many bytes ``a`` and ``b`` share at one end, at most ``limit``.

    A binary search, each step a slice of ``b`` compared in place with ``a`` (in C).
    """
    low, high = 0, limit
    end_a, end_b = len(a), len(b)
    while low < high:
        middle = (low + high + 1) // 2
        if from_end:
            same = a.endswith(b[end_b - middle : end_b - low], 0, end_a - low)
        else:
            same = a.startswith(b[low:middle], low)
        if same:
            low = middle
        else:
            high = middle - 1
    return low


def _flags(size: int, head: int, lacked: list[int], edits: list[int]) -> bytearray:
    """Whether each line of one side is changed.

    Changed are the lines the other side lacks and those the script edits (given by their
    index among the others), both counted from line ``head``.
    """
    flags = bytearray(size)
    for index in itertools.chain(lacked, _positions(edits, lacked)):
        flags[head + index] = 1
    return flags


def _lacked(held: Flags) -> list[int]:
    """The indexes, in order, of the lines not held."""
    count = held.count(0)
    if count > FEW_LACKED:
        return list(compress(range(len(held)), map(operator.not_, held)))
    found: list[int] = []
    at = -1
    for _ in range(count):
        at = held.find(0, at + 1)
        found.append(at)
    return found


def _without(lines: list[bytes], held: Flags, lacked: list[int]) -> list[bytes]:
    """The ``held`` lines; ``lacked`` are the indexes of the others."""
    if not lacked:
        return lines
    if len(lacked) > FEW_LACKED:
        return list(compress(lines, held))
    kept: list[bytes] = []
    at = 0
    for index in lacked:
        kept += lines[at:index]
        at = index + 1
    kept += lines[at:]
    return kept


def _positions(indexes: list[int], lacked: list[int]) -> list[int]:
    """Indexes among the held lines, as indexes among all (``lacked``: the others')."""
    if not lacked:
        return indexes
    # The k-th held line comes after every lacked one with fewer held lines before it.
    held_before = [index - count for count, index in enumerate(lacked)]
    return [k + bisect.bisect_right(held_before, k) for k in indexes]


def common_ends(a: Text, b: Text) -> tuple[int, int, int]:
    """Where the lines two versions share at the head and at the tail lie, in bytes.

    Returns ``(start, end_a, end_b)``: the shared head is ``data[:start]`` in both, the shared
    tail ``a.data[end_a:]`` and ``b.data[end_b:]``; each is whole lines, and the tail never
    overlaps the head.
    """
    da, db = a.data, b.data
    prefix = _shared_bytes(da, db, min(len(da), len(db)), from_end=False)
    start = da.rfind(b"\n", 0, prefix) + 1  # the shared lines end at a newline
    suffix = _shared_bytes(da, db, min(len(da), len(db)) - start, from_end=True)
    end_a, end_b = len(da) - suffix, len(db) - suffix
    if not (_line_start(da, end_a, start) and _line_start(db, end_b, start)):
        # The shared bytes begin inside a line on one side: its tail lines begin after it.
        step = da.find(b"\n", end_a) + 1 - end_a
        end_a += step
        end_b += step
    return start, end_a, end_b


def _counted(text: Text, start: int, end: int, middle: int) -> tuple[int, int]:
    """How many lines lie before byte ``start`` and from byte ``end`` on, ``middle`` between.

    Where the text's own count is known, only the shorter end is counted.
    """
    data = text.data
    if text._count < 0:
        return data.count(b"\n", 0, start), data.count(b"\n", end)
    if start <= len(data) - end:
        head = data.count(b"\n", 0, start)
        return head, text._count - middle - head
    tail = data.count(b"\n", end)
    return text._count - middle - tail, tail


def _line_start(data: bytes, at: int, floor: int) -> bool:
    return at == floor or data[at - 1] == 0x0A


def edit_flags(old: list[bytes], new: list[bytes]) -> tuple[list[bool], list[bool]] | None:
    """For each line of ``old`` and of ``new``, whether it is changed (deleted or inserted).

    None when the versions are too large to align (:data:`MAX_CELLS`).
    """
    found = edit_spans(Text.of(old), Text.of(new))
    return None if found is None else (list(map(bool, found[0])), list(map(bool, found[1])))


def edit_spans(old: Text, new: Text) -> tuple[bytearray, bytearray, Span, Span] | None:
    """:func:`edit_flags` of two versions, with the span of each side's changed lines.

    The flags are bytes, 1 for a changed line.

    The lines both versions share at the head and the tail are measured in bytes and never
    split, so a small edit to a long file costs little past finding them.
    """
    start, end_a, end_b = common_ends(old, new)
    mid_a = old.between(start, end_a)
    mid_b = new.between(start, end_b)
    # Lines are counted here, in passing, rather than by reading each version whole.
    if new._count >= 0 or old._count < 0:
        head, tail = _counted(new, start, end_b, len(mid_b))
    else:
        head, tail = _counted(old, start, end_a, len(mid_a))
    size_a = old._count = head + len(mid_a) + tail
    size_b = new._count = head + len(mid_b) + tail
    # As xdiff's xdl_cleanup_records: a line the other side lacks is changed for certain and
    # left out of the search, which then only places the lines both sides hold.
    held_a, held_b = _held(mid_a, mid_b)
    lacked_a, lacked_b = _lacked(held_a), _lacked(held_b)
    kept_a, kept_b = _without(mid_a, held_a, lacked_a), _without(mid_b, held_b, lacked_b)
    edits = _myers(kept_a, kept_b)
    if edits is None:
        if len(kept_a) * len(kept_b) > MAX_CELLS:
            return None
        ids: dict[bytes, int] = {}  # rapidfuzz would compare hashes: number the lines
        number = itertools.count()
        edits = _lcs_edits(
            list(map(ids.setdefault, kept_a, number)), list(map(ids.setdefault, kept_b, number))
        )
    gone = _flags(size_a, head, lacked_a, edits[0])
    added = _flags(size_b, head, lacked_b, edits[1])
    a = _Side(old, head, start, mid_a, end_a)
    b = _Side(new, head, start, mid_b, end_b)
    span_a = _compact(a, gone, added, _Indents(a), (head, size_a - tail), (head, size_b - tail))
    span_b = _compact(b, added, gone, _Indents(b), (head, size_b - tail), span_a)
    return gone, added, span_a, span_b


def _held(a: list[bytes], b: list[bytes]) -> tuple[Flags, Flags]:
    """For each line of ``a``, whether ``b`` holds it too; for each of ``b``, whether ``a`` does."""
    return bytes(map(set(b).__contains__, a)), bytes(map(set(a).__contains__, b))


def _myers(a: list[bytes], b: list[bytes]) -> tuple[list[int], list[int]] | None:
    """A shortest edit script (Myers' greedy, with a trace): the deleted ``i``, inserted ``j``.

    None when it would take more than :data:`MAX_EDITS` edits.
    """
    n, m = len(a), len(b)
    if abs(n - m) > MAX_EDITS:
        return None
    rounds = min(n + m, MAX_EDITS)
    offset = rounds + 1  # diagonals -rounds..rounds, and one either side
    v = [0] * (2 * offset + 1)
    trace: list[list[int]] = []
    for d in range(rounds + 1):
        if d == BOUND_ROUND and _fewest_edits(a, b) > MAX_EDITS:
            return None
        low, high = offset - d, offset + d
        trace.append(v[low : high + 1])
        for at in range(low, high + 1, 2):  # ``at`` is diagonal ``at - offset`` in ``v``
            if at == low or (at != high and v[at - 1] < v[at + 1]):
                x = v[at + 1]
            else:
                x = v[at - 1] + 1
            y = x - at + offset
            if x < n and y < m and a[x] == b[y]:  # most diagonals stop at once: no call
                x = _snake(a, b, x, y)
                y = x - at + offset
            v[at] = x
            if x >= n and y >= m:
                return _back(trace, d, len(a), len(b))
    return None


def _fewest_edits(a: list[bytes], b: list[bytes]) -> int:
    """A lower bound on the edits between ``a`` and ``b``: the lines one holds more often."""
    counts = Counter(a)
    counts.subtract(b)
    return sum(map(abs, counts.values()))


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

    Whole slices are compared (in C), doubling while they match, then halving around the
    first difference, so a long run of unchanged lines costs a few comparisons rather than
    one Python step a line.
    """
    n, m = len(a), len(b)
    step, grow = 8, True
    while step:
        size = min(step, n - x, m - y)
        if size <= 0:
            break
        if a[x : x + size] == b[y : y + size]:
            x += size
            y += size
            step = step * 2 if grow else step // 2
        else:
            grow = False
            step //= 2
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

    def __init__(self, flags: bytearray, recs: _Side, start: int) -> None:
        self.flags = flags
        self.recs = recs
        self.start = start
        self.end = self._end_from(start)

    def _end_from(self, at: int) -> int:
        return _run_end(self.flags, at)

    def slide_up(self) -> bool:
        """Shift the group up one line if the lines allow, merging (``group_slide_up``)."""
        recs, flags = self.recs, self.flags
        if self.start > 0 and recs[self.start - 1] == recs[self.end - 1]:
            self.start -= 1
            self.end -= 1
            flags[self.start] = 1
            flags[self.end] = 0
            while self.start > 0 and flags[self.start - 1]:
                self.start -= 1
            return True
        return False

    def slide_down(self) -> bool:
        """Shift the group down one line if the lines allow, merging (``group_slide_down``)."""
        recs, flags = self.recs, self.flags
        if self.end < len(flags) and recs[self.start] == recs[self.end]:
            flags[self.start] = 0
            flags[self.end] = 1
            self.start += 1
            self.end = self._end_from(self.end + 1)
            return True
        return False


class _Other:
    """The other side's group in step with the one compacted.

    It is the ``index``-th run of changed lines (between the side's ``index``-th unchanged
    line and the next), which compacting this side never alters.
    """

    def __init__(self, flags: bytearray, span: Span) -> None:
        self.flags = flags
        self.span = span
        self._filled: set[int] | None = None  # found when a group first slides
        self.index = 0

    def empty(self) -> bool:
        """Whether the group holds no changed line."""
        if self._filled is None:
            self._filled = self._groups_filled()
        return self.index not in self._filled

    def _groups_filled(self) -> set[int]:
        """The indexes of the groups holding changes.

        A run of changes starting at ``start`` is the group after ``start - changed_before``
        unchanged lines.
        """
        flags, (low, high) = self.flags, self.span
        filled: set[int] = set()
        changed_before, end = 0, low
        while True:
            start = flags.find(1, end, high)
            if start < 0:
                return filled
            end = flags.find(0, start, high)
            if end < 0:
                end = high
            filled.add(start - changed_before)
            changed_before += end - start


def _compact(
    recs: _Side,
    changed: bytearray,
    other: bytearray,
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
        start = changed.find(1, max(end + 1, span[0]), span[1])
        if start < 0:
            return (low, high) if low < high else (0, 0)
        index += start - end
        stop = _run_end(changed, start)
        if (start == 0 or recs[start - 1] != recs[stop - 1]) and (
            stop == len(changed) or recs[start] != recs[stop]
        ):
            end = stop  # it can slide neither way: most groups stay as they are
        else:
            go.index = index
            g = _Group(changed, recs, start)
            _place(g, go, indents)
            start, end, index = g.start, g.end, go.index
        low, high = min(low, start), max(high, end)


def _run_end(flags: bytearray, at: int) -> int:
    """Where the run of changed lines at ``at`` ends."""
    end = flags.find(0, at)
    return len(flags) if end < 0 else end


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

    def __init__(self, lines: _Side) -> None:
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
