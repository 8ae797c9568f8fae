"""The line diff ``git blame`` makes: git's xdiff (Myers), step for step.

Blame hands a parent the lines a diff leaves unchanged, so where several scripts are equally
short (a repeated blank line or brace), or xdiff's heuristics take a longer one, blame agrees
with git only if the diff is xdiff's own. Each step is the one ``git blame`` runs (for a diff
without context, indent heuristic on):

1. ``trim_common_tail`` — the tail both versions share, cut in whole 1 KiB blocks
   (:func:`tail_cut`);
2. ``xdl_trim_ends`` — the lines both share at the head and the tail set aside, measured in
   bytes and never split (:func:`common_ends`);
3. ``xdl_cleanup_records`` — a line the other version lacks is changed for certain, and one it
   holds often (past :func:`_most`) is changed too amid such lines (``xdl_clean_mmatch``); how
   often is counted over each version whole, which :class:`Counts` carries down a history so
   that no version is counted twice;
4. ``xdl_recs_cmp`` — the lines left are divided at middle snakes, recursively (``xdl_split``,
   with its heuristics past a cost of 256);
5. ``xdl_change_compact`` — each group of changes is slid up and then down as far as equal
   lines allow, merging with groups it meets, and left where it lines up with a group of changes
   in the other version, or else where git's indent heuristic scores the split best.

A long middle (edits near the top and the bottom, or every few dozen lines) is cut into boxes
where both sides share a run of lines, just after and just before a line both versions hold
once (:func:`_boxes`): step 3 keeps such a line and never looks past a kept one, so it runs box
by box, and the run's lines are split once for step 4, which runs over the whole middle.
:class:`_Shared` answers how often a line occurs outside the middle without reading the lines.

Spec: ANY2.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable
from itertools import compress, pairwise, repeat

#: xdiff's constants (``xdiffi.c``, ``xprepare.c``, ``xdiff-interface.c``).
TAIL_BLOCK = 1024  # trim_common_tail's block
MAX_EQLIMIT = 1024  # the most a line's matches count for
SIMSCAN_WINDOW = 100  # how far xdl_clean_mmatch looks either way
KPDIS_RUN = 4
MAX_COST_MIN = 256  # the least cost past which xdl_split takes the furthest point
HEUR_MIN_COST = 256  # the cost past which a long snake may be taken as the split
SNAKE_CNT = 20  # how long a snake is long
K_HEUR = 4
LINE_MAX = 1 << 62
#: xdl_cleanup_records' verdicts on a line.
DISCARD, KEEP, INVESTIGATE = 0, 1, 2


#: Where a side's changed lines lie: every one of them is in ``range(*span)``.
Span = tuple[int, int]
#: A flag a line, 1 or 0 (searched with ``find``, which is ``memchr``).
Flags = bytes | bytearray


class Text:
    r"""One version of a file as the diff reads it: its bytes, split into lines where read.

    Lines are as git counts them (split on ``\n`` only, a final unterminated line included);
    the bytes are kept ending in a newline so that every line ends alike, and ``open_end``
    says the last had none. Two versions a diff compares share most lines at the head and the
    tail: those are measured by comparing bytes (in C) and never split, and only the lines
    between them become objects.
    """

    __slots__ = ("_count", "data", "open_end")

    def __init__(self, data: bytes) -> None:
        self.open_end = bool(data) and not data.endswith(b"\n")
        if self.open_end:
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

    The middle is split, in pieces; a line outside it (a group of changes slid into the head or
    the tail) is cut from the bytes when read, walking out from the nearest known line start.
    """

    __slots__ = ("_down", "_firsts", "_up", "data", "head", "pieces", "size", "tail_line")

    def __init__(
        self, text: Text, head: int, ends: tuple[int, int], pieces: list[tuple[int, list[bytes]]]
    ) -> None:
        self.data = text.data
        self.size = text.count  # known from the diff: not counted again
        self.head = head
        self.pieces = sorted(pieces)
        self._firsts = [first for first, _lines in self.pieces]
        self.tail_line = head + text.data.count(b"\n", *ends)
        self._up = [ends[0]]  # the starts of lines head, head - 1, ...
        self._down = [ends[1]]  # the starts of lines tail_line, tail_line + 1, ...

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, at: int) -> bytes:
        if self.head <= at < self.tail_line:
            first, lines = self.pieces[bisect.bisect_right(self._firsts, at) - 1]
            return lines[at - first]
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


def common_ends(a: Text, b: Text, shared_tail: int = -1) -> tuple[int, int, int]:
    """Where the lines two versions share at the head and at the tail lie, in bytes.

    Returns ``(start, end_a, end_b)``: the shared head is ``data[:start]`` in both, the shared
    tail ``a.data[end_a:]`` and ``b.data[end_b:]``; each is whole lines, and the tail never
    overlaps the head (xdiff's ``xdl_trim_ends``). ``shared_tail``, when known, is how many
    bytes the two share at their end.
    """
    da, db = a.data, b.data
    prefix = _shared_bytes(da, db, min(len(da), len(db)), from_end=False)
    start = da.rfind(b"\n", 0, prefix) + 1  # the shared lines end at a newline
    limit = min(len(da), len(db)) - start
    if shared_tail < 0:
        suffix = _shared_bytes(da, db, limit, from_end=True)
    else:
        suffix = min(shared_tail, limit)
    end_a, end_b = len(da) - suffix, len(db) - suffix
    if not (_line_start(da, end_a, start) and _line_start(db, end_b, start)):
        # The shared bytes begin inside a line on one side: its tail lines begin after it.
        step = da.find(b"\n", end_a) + 1 - end_a
        end_a += step
        end_b += step
    return start, end_a, end_b


def _line_start(data: bytes, at: int, floor: int) -> bool:
    return at == floor or data[at - 1] == 0x0A


def tail_cut(a: bytes, b: bytes, shared_tail: int) -> int:
    """How many bytes git leaves off the end of both versions before diffing them.

    ``trim_common_tail`` (``xdiff-interface.c``, for a diff without context, as blame's):
    the ``shared_tail`` bytes in whole 1 KiB blocks, less the bytes up to its first newline.
    """
    smaller = min(len(a), len(b))
    trimmed = min(shared_tail, smaller) // TAIL_BLOCK * TAIL_BLOCK
    if not trimmed:
        return 0
    at = len(a) - trimmed
    newline = a.find(b"\n", at, len(a))
    return trimmed - (newline - at + 1 if newline >= 0 else trimmed)


def edit_flags(old: list[bytes], new: list[bytes]) -> tuple[list[bool], list[bool]]:
    """For each line of ``old`` and of ``new``, whether it is changed (deleted or inserted)."""
    gone, added, _a, _b = edit_spans(Text.of(old), Text.of(new))
    return list(map(bool, gone)), list(map(bool, added))


def line_counts(text: Text) -> LineCounts:
    """How often each line occurs in ``text``."""
    return Counter(text.lines())


def edit_spans(
    old: Text, new: Text, counts: Counts | None = None
) -> tuple[bytearray, bytearray, Span, Span]:
    """:func:`edit_flags` of two versions, with the span of each side's changed lines.

    The flags are bytes, 1 for a changed line; the steps are the module docstring's: the cut
    tail (:func:`tail_cut`), the shared head and tail (:func:`common_ends`), the middle in
    boxes (:func:`_boxes`), the discarded lines (:func:`_doubtful`, :func:`_discarded`), the
    middle snakes (:func:`_divide`) and the slides (:func:`_compact`).

    ``counts`` carries how often each line occurs in ``new`` (found when absent) and learns
    how often in ``old``, so that a walk down a file's history never counts a version whole
    twice.
    """
    if counts is None:
        counts = Counts(line_counts(new))
    if old.open_end != new.open_end:
        return _open_end_apart(old, new, counts)
    shared_tail = _shared_bytes(old.data, new.data, min(len(old.data), len(new.data)), True)
    cut = tail_cut(old.data, new.data, shared_tail)
    a, b = old, new
    if cut:
        a, b = Text(old.data[: len(old.data) - cut]), Text(new.data[: len(new.data) - cut])
    start, end_a, end_b = common_ends(a, b, shared_tail - cut)
    known, end = (new, end_b) if new._count >= 0 else (old, end_a)
    boxes = _boxes(a.data, b.data, (start, end_a, start, end_b), _Unique(old.data, counts.of_new))
    pieces_a, pieces_b, runs = _split_boxes(a, b, boxes, 0)
    in_runs = sum(len(lines) for _a, _b, lines in runs)
    mid_a = sum(len(lines) for _first, lines in pieces_a) + in_runs
    mid_b = sum(len(lines) for _first, lines in pieces_b) + in_runs
    head, cut_lines, tail = _line_counts(known, start, end, cut, mid_b if known is new else mid_a)
    if head:
        pieces_a = [(first + head, lines) for first, lines in pieces_a]
        pieces_b = [(first + head, lines) for first, lines in pieces_b]
        runs = [(run_a + head, run_b + head, lines) for run_a, run_b, lines in runs]
    size_a = a._count = head + mid_a + tail
    size_b = b._count = head + mid_b + tail
    old._count, new._count = size_a + cut_lines, size_b + cut_lines
    in_a, in_b = Counter[bytes](), Counter[bytes]()
    for (_first, lines_a), (_first, lines_b) in zip(pieces_a, pieces_b, strict=True):
        in_a.update(lines_a)
        in_b.update(lines_b)
    differing = {line for line, _count in in_a.items() ^ in_b.items()}
    between = [(one[1], two[0]) for one, two in pairwise(boxes)]
    regions = [(0, start), *between, (end_a, len(a.data))]
    shared = _Shared(a, regions, counts.of_new, in_b, (new.data, len(new.data) - cut, cut_lines))
    gone, added = bytearray(size_a), bytearray(size_b)
    doubtful = (
        _doubtful(in_a, in_b, differing, shared, _most(size_a)),
        _doubtful(in_b, in_a, differing, shared, _most(size_b)),
    )
    kept_a, at_a, kept_b, at_b = _kept(
        pieces_a, pieces_b, runs, (in_a, in_b), doubtful, gone, added
    )
    _divide(kept_a, kept_b, at_a, at_b, gone, added)
    pieces_a += [(run_a, lines) for run_a, _run_b, lines in runs]
    pieces_b += [(run_b, lines) for _run_a, run_b, lines in runs]
    side_a = _Side(a, head, (start, end_a), pieces_a)
    side_b = _Side(b, head, (start, end_b), pieces_b)
    changes_a, changes_b = (head, size_a - tail), (head, size_b - tail)
    span_a = _compact(side_a, gone, added, _Indents(side_a), changes_a, changes_b)
    span_b = _compact(side_b, added, gone, _Indents(side_b), changes_b, span_a)
    counts.learn(in_a, in_b, differing)
    if cut:
        gone += bytes(cut_lines)
        added += bytes(cut_lines)
    return gone, added, span_a, span_b


#: What marks a last line without a newline where the other version's last line has one:
#: git's line is then another line, though its text is the same. Only whitespace, so that the
#: indent heuristic reads the line alike.
OPEN_END = b"\v\f\r\f\v"


def _open_end_apart(
    old: Text, new: Text, counts: Counts
) -> tuple[bytearray, bytearray, Span, Span]:
    """:func:`edit_spans` where one version's last line lacks the newline the other's has.

    That line is marked (:data:`OPEN_END`) for the diff, and the counts with it.
    """
    marked = [_marked(text) if text.open_end else text for text in (old, new)]
    of_new = dict(counts.of_new)
    if new.open_end:
        _recount(of_new, _last_line(new), _last_line(marked[1]))
    inner = Counts(of_new, spare=True)
    found = edit_spans(marked[0], marked[1], inner)
    assert inner.of_old is not None
    if old.open_end:
        _recount(inner.of_old, _last_line(marked[0]), _last_line(old))
    counts.of_old = inner.of_old
    old._count, new._count = marked[0].count, marked[1].count
    return found


def _marked(text: Text) -> Text:
    marked = Text(text.data[:-1] + OPEN_END + b"\n")
    marked._count = text._count
    return marked


def _last_line(text: Text) -> bytes:
    return text.data[text.data.rfind(b"\n", 0, len(text.data) - 1) + 1 : -1]


def _recount(counts: LineCounts, line: bytes, instead: bytes) -> None:
    """One occurrence of ``line`` counted as one of ``instead``."""
    left = counts[line] - 1
    if left:
        counts[line] = left
    else:
        del counts[line]
    counts[instead] = counts.get(instead, 0) + 1


def _kept(
    pieces_a: list[Piece],
    pieces_b: list[Piece],
    runs: list[tuple[int, int, list[bytes]]],
    counted: tuple[Counter[bytes], Counter[bytes]],
    doubtful: tuple[dict[bytes, int], dict[bytes, int]],
    gone: bytearray,
    added: bytearray,
) -> tuple[list[bytes], list[int], list[bytes], list[int]]:
    """The lines left to compare on each side, with their line numbers, in order.

    Each box's lines as :func:`_discarded` leaves them, and the shared runs between boxes
    whole: xdl_cleanup_records discards none of theirs, no discarded line being in reach.
    """
    kept_a: list[bytes] = []
    kept_b: list[bytes] = []
    at_a: list[int] = []
    at_b: list[int] = []
    in_a, in_b = counted
    for index, ((first_a, lines_a), (first_b, lines_b)) in enumerate(
        zip(pieces_a, pieces_b, strict=True)
    ):
        _discarded(lines_a, in_b, doubtful[0], gone, first_a, kept_a, at_a)
        _discarded(lines_b, in_a, doubtful[1], added, first_b, kept_b, at_b)
        if index < len(runs):
            run_a, run_b, lines = runs[index]
            kept_a += lines
            kept_b += lines
            at_a += range(run_a, run_a + len(lines))
            at_b += range(run_b, run_b + len(lines))
    return kept_a, at_a, kept_b, at_b


#: A box at least this long (bytes, each side) is searched for a run of lines both sides share.
BOX_BYTES = 4096
#: How many bytes from the older side a shared run is sought by.
PROBE_BYTES = 512
#: The fewest lines a shared run must have for a box to be cut through it.
RUN_LINES = 24
#: How far into each end of a run a line kept for certain is sought, for the cut to keep.
EDGE_LINES = 8

#: A part of the middle: bytes ``a_lo:a_hi`` of the older version, ``b_lo:b_hi`` of the newer.
Box = tuple[int, int, int, int]


def _boxes(a: bytes, b: bytes, box: Box, unique: Callable[[bytes], bool]) -> list[Box]:
    """The middle as boxes, in order, cut through runs of lines both sides share.

    A box is cut after a line near the start of the run and before one near its end, each a
    line both versions hold once (``unique``): xdl_cleanup_records keeps such a line, and
    its look around a line (``xdl_clean_mmatch``) stops at a kept line, so it never reads
    across a cut; and no line between them can be discarded. What lies between two boxes is
    lines both versions share, like the head and the tail.
    """
    out: list[Box] = []
    todo = [box]
    while todo:
        box = todo.pop()
        cut = _cut(a, b, box, unique)
        if cut is None:
            out.append(box)
            continue
        a_lo, a_hi, b_lo, b_hi = box
        left_a, left_b, right_a, right_b = cut
        todo.append((right_a, a_hi, right_b, b_hi))
        todo.append((a_lo, left_a, b_lo, left_b))
    return out


def _cut(a: bytes, b: bytes, box: Box, unique: Callable[[bytes], bool]) -> Box | None:
    """Where a long box is cut (the left box's ends, the right box's starts), if anywhere.

    A shared run is probed for at the middle of the older side, then at a quarter and three
    quarters.
    """
    a_lo, a_hi, b_lo, b_hi = box
    if a_hi - a_lo < BOX_BYTES or b_hi - b_lo < BOX_BYTES:
        return None
    for share in (2, 1, 3):
        run = _shared_run(a, b, box, share)
        if run is None:
            continue
        run_a, run_end_a, run_b, run_end_b = run
        lines = a[run_a:run_end_a].split(b"\n", EDGE_LINES)
        head = next((i for i, line in enumerate(lines[:EDGE_LINES]) if unique(line)), None)
        lines = a[run_a:run_end_a].rsplit(b"\n", EDGE_LINES + 1)
        tail = next((i for i, line in enumerate(lines[-2:0:-1]) if unique(line)), None)
        if head is None or tail is None:
            continue
        left = _lines_after(a, run_a, head + 1) - run_a
        right = run_end_a - _lines_before(a, run_end_a, tail + 1)
        if run_a + left < run_end_a - right:
            return run_a + left, run_b + left, run_end_a - right, run_end_b - right
    return None


def _shared_run(a: bytes, b: bytes, box: Box, share: int) -> Box | None:
    """The run of lines both sides share ``share`` quarters into the box, if long enough.

    Long enough is :data:`RUN_LINES` lines; the run is found from :data:`PROBE_BYTES` of the
    older side's lines there, and grown both ways as far as the sides agree.
    """
    a_lo, a_hi, b_lo, b_hi = box
    probe = a.find(b"\n", a_lo + (a_hi - a_lo) * share // 4, a_hi) + 1
    probe_end = a.find(b"\n", probe + PROBE_BYTES, a_hi) + 1
    if probe <= a_lo or probe_end <= 0:
        return None
    found = b.find(a[probe:probe_end], b_lo, b_hi)
    if found < 0 or (found > b_lo and b[found - 1] != 0x0A):
        return None
    found_end = found + probe_end - probe
    limit = min(probe - a_lo, found - b_lo)
    before = _shared_bytes(a[a_lo:probe], b[b_lo:found], limit, from_end=True)
    run_a, run_b = probe - before, found - before
    while (run_a > a_lo and a[run_a - 1] != 0x0A) or (run_b > b_lo and b[run_b - 1] != 0x0A):
        step = a.index(b"\n", run_a) + 1 - run_a
        run_a += step
        run_b += step
    limit = min(a_hi - probe_end, b_hi - found_end)
    after = _shared_bytes(a[probe_end:a_hi], b[found_end:b_hi], limit, from_end=False)
    run_end_a = a.rfind(b"\n", probe_end - 1, probe_end + after) + 1
    run_end_b = found_end + run_end_a - probe_end
    if a.count(b"\n", run_a, run_end_a) < RUN_LINES:
        return None
    return run_a, run_end_a, run_b, run_end_b


def _lines_after(data: bytes, at: int, count: int) -> int:
    """Where the line ``count`` lines after the one starting at ``at`` starts."""
    for _ in range(count):
        at = data.index(b"\n", at) + 1
    return at


def _lines_before(data: bytes, end: int, count: int) -> int:
    """Where the line ``count`` lines before the one starting at ``end`` starts."""
    for _ in range(count):
        end = data.rindex(b"\n", 0, end - 1) + 1
    return end


def _split_boxes(
    a: Text, b: Text, boxes: list[Box], head: int
) -> tuple[list[Piece], list[Piece], list[tuple[int, int, list[bytes]]]]:
    """Each box's lines on each side, and each shared run's between boxes, numbered.

    A run's lines are split once, from the older side, and serve both.
    """
    pieces_a: list[Piece] = []
    pieces_b: list[Piece] = []
    runs: list[tuple[int, int, list[bytes]]] = []
    line_a = line_b = head
    for index, (a_lo, a_hi, b_lo, b_hi) in enumerate(boxes):
        if index:
            lines = a.between(boxes[index - 1][1], a_lo)
            runs.append((line_a, line_b, lines))
            line_a += len(lines)
            line_b += len(lines)
        pieces_a.append((line_a, a.between(a_lo, a_hi)))
        pieces_b.append((line_b, b.between(b_lo, b_hi)))
        line_a += len(pieces_a[-1][1])
        line_b += len(pieces_b[-1][1])
    return pieces_a, pieces_b, runs


#: Lines of one side and the number of the first.
Piece = tuple[int, list[bytes]]


#: How often each line occurs in one version.
LineCounts = dict[bytes, int]


class Counts:
    """How often each line occurs in the newer version of a diff; the older's once diffed."""

    __slots__ = ("of_new", "of_old", "spare")

    def __init__(self, of_new: LineCounts, spare: bool = False) -> None:
        self.of_new = of_new
        self.of_old: LineCounts | None = None
        self.spare = spare  # the newer's counts are needed no more: the older's replace them

    def learn(
        self, in_old_mid: Counter[bytes], in_new_mid: Counter[bytes], differing: set[bytes]
    ) -> None:
        """The older version's counts: the newer's, its middle lines traded for the older's.

        Only the ``differing`` lines, those the middles hold a different number of times, change.
        """
        found = self.of_new if self.spare else dict(self.of_new)
        for line in differing:
            count = found.get(line, 0) + in_old_mid.get(line, 0) - in_new_mid.get(line, 0)
            if count:
                found[line] = count
            else:
                found.pop(line, None)
        self.of_old = found


class _Unique:
    """Whether a line occurs exactly once in each version (the newer's counts, the older's bytes).

    Each side then holds it once, and xdl_cleanup_records keeps it on both.
    """

    __slots__ = ("in_new", "old")

    def __init__(self, old: bytes, in_new: LineCounts) -> None:
        self.old = old
        self.in_new = in_new

    def __call__(self, line: bytes) -> bool:
        if self.in_new.get(line) != 1:
            return False
        whole = b"\n" + line + b"\n"
        first = self.old.find(whole)
        at_start = self.old.startswith(whole[1:])
        if first < 0:
            return at_start
        return not at_start and self.old.find(whole, first + 1) < 0


class _Shared:
    """The lines both versions share once cut (head, tail, runs between boxes): how often.

    Known from the newer version's counts less its middle lines, when the cut tail cannot
    decide it; otherwise the shared lines, or the cut ones if fewer bytes, are searched.
    """

    __slots__ = (
        "_counted",
        "_cut",
        "_cut_lines",
        "_regions",
        "_search_shared",
        "in_new",
        "in_new_mid",
    )

    def __init__(
        self,
        text: Text,
        regions: list[tuple[int, int]],
        in_new: LineCounts,
        in_new_mid: Counter[bytes],
        cut: tuple[bytes, int, int],
    ) -> None:
        data, at, self._cut_lines = cut
        self._regions = [(text.data, low, high) for low, high in regions if low < high]
        self._cut = (data, at, len(data)) if at < len(data) else None
        self.in_new = in_new
        self.in_new_mid = in_new_mid
        shared_bytes = sum(high - low for _data, low, high in self._regions)
        self._search_shared = self._cut is None or shared_bytes <= len(data) - at
        self._counted: dict[bytes, int] = {}

    def verdict(self, line: bytes, in_other_mid: int, most: int) -> int:
        """``xdl_cleanup_records``' verdict on a middle line the other middle holds so often."""
        if in_other_mid >= most:
            return INVESTIGATE
        outside = self.in_new.get(line, 0) - self.in_new_mid[line]  # shared, or in the cut
        cut = self._cut_lines
        if outside <= 0:
            return KEEP if in_other_mid else DISCARD
        if in_other_mid + outside < most:
            held = in_other_mid or outside > cut or self._count(line, True)
            return KEEP if held else DISCARD
        if in_other_mid + outside - cut >= most or in_other_mid + self.at_least(line) >= most:
            return INVESTIGATE
        matches = in_other_mid + self._count(line, False)
        return DISCARD if not matches else KEEP if matches < most else INVESTIGATE

    def _count(self, line: bytes, any_: bool) -> int:
        """How often ``line`` is shared (when ``any_``, whether it is, as 0 or 1)."""
        found = self._counted.get(line)
        if found is not None:
            return found
        if any_ or self._cut is None or self._search_shared:
            found = _occurrences(line, self._regions, any_)
        else:
            outside = self.in_new.get(line, 0) - self.in_new_mid[line]
            found = outside - _occurrences(line, [self._cut], False)
        if not any_:
            self._counted[line] = found
        return found

    def at_least(self, line: bytes) -> int:
        """A count ``line`` is shared at least: its occurrences that do not follow another."""
        if not self._search_shared:
            return 0
        whole = b"\n" + line + b"\n"
        return sum(
            data.count(whole, low - 1, high)
            if low
            else data.count(whole, 0, high) + data.startswith(whole[1:])
            for data, low, high in self._regions
        )


def _occurrences(line: bytes, regions: list[tuple[bytes, int, int]], any_: bool) -> int:
    """How often ``line`` is one of the lines of the regions (``data[low:high]``, whole lines).

    When ``any_``, 1 as soon as one is found.
    """
    if any_:
        whole = line + b"\n"
        return int(
            any(
                data.startswith(whole, low) or data.find(b"\n" + whole, low, high) >= 0
                for data, low, high in regions
            )
        )
    return sum(_count_line(data, low, high, line) for data, low, high in regions)


#: Every byte but a newline as ``a``: a non-blank line then ends in ``a\n``.
_NOT_NEWLINE = bytes(0x0A if byte == 0x0A else 0x61 for byte in range(256))


def _count_line(data: bytes, low: int, high: int, line: bytes) -> int:
    """How many of the lines in ``data[low:high]`` (whole lines) are ``line``.

    Counted in C: blank lines as the newlines no other byte ends; another line by its
    occurrences between newlines, unless it follows itself somewhere, which a pattern counts.
    """
    if not line:
        part = data[low:high]
        return part.count(b"\n") - part.translate(_NOT_NEWLINE).count(b"a\n")
    whole = b"\n" + line + b"\n"
    if data.find(whole + line + b"\n", max(low - 1, 0), high) >= 0:
        pattern = re.compile(b"^" + re.escape(line) + b"\n", re.MULTILINE)
        return len(pattern.findall(data, low, high))
    if low:
        return data.count(whole, low - 1, high)
    return data.count(whole, 0, high) + data.startswith(line + b"\n", 0, high)


def _most(size: int) -> int:
    """How often a line may match before it is only kept beside kept lines (``mlim``)."""
    return min(_root(size), MAX_EQLIMIT)


def _discarded(
    lines: list[bytes],
    other_mid: Counter[bytes],
    doubtful: dict[bytes, int],
    changed: bytearray,
    first: int,
    kept: list[bytes],
    numbers: list[int],
) -> None:
    """Run xdiff's ``xdl_cleanup_records`` on a piece of one side's middle.

    A line the other version lacks is changed for certain; one it holds often is changed too
    when it lies amid such lines (``xdl_clean_mmatch``). The others are returned with their
    line numbers (``first`` is the piece's) appended to ``kept`` and ``numbers``; the discarded
    are flagged in ``changed``.
    """
    action = bytearray(map(other_mid.__contains__, lines))  # KEEP where held, else DISCARD
    if doubtful:
        action = bytearray(map(doubtful.get, lines, action))
        if INVESTIGATE in action:
            _investigate(action)
    changed[first : first + len(lines)] = action.translate(_CHANGED)
    kept += compress(lines, action)
    numbers += compress(range(first, first + len(lines)), action)


def _doubtful(
    distinct: Counter[bytes],
    other_mid: Counter[bytes],
    differing: set[bytes],
    shared: _Shared,
    most: int,
) -> dict[bytes, int]:
    """The middle lines whose verdict is not whether the other middle holds them, with theirs.

    A line the other middle lacks (one of the ``differing`` lines, those the two middles hold
    a different number of times) may still be held outside it; one both middles hold may match
    ``most`` times, which a line they hold as often can only if the newer version holds it that
    often. Only these get :meth:`_Shared.verdict`.
    """
    in_new, in_new_mid = shared.in_new, shared.in_new_mid
    doubtful: dict[bytes, int] = {}
    for line in differing:
        if line not in distinct:
            continue
        held = other_mid.get(line, 0)
        if held or in_new.get(line, 0) > in_new_mid[line]:
            found = shared.verdict(line, held, most)
            if found != (KEEP if held else DISCARD):
                doubtful[line] = found
    # A line both middles hold as often matches at most as often as the newer version holds it.
    if len(distinct) < len(in_new):
        often = compress(distinct, map(most.__le__, map(in_new.get, distinct, repeat(0))))
    else:
        often = compress(in_new, map(most.__le__, in_new.values()))
    for line in often:
        if line in distinct and line in other_mid and line not in differing:
            found = shared.verdict(line, other_mid[line], most)
            if found != KEEP:
                doubtful[line] = found
    return doubtful


#: A verdict as a change flag: what is kept is unchanged.
_CHANGED = bytes.maketrans(bytes((DISCARD, KEEP)), bytes((1, 0)))
#: Runs of lines not kept that hold a discarded one.
_AMID = re.compile(b"[\\x00\\x02]*\\x00[\\x00\\x02]*")


def _investigate(action: bytearray) -> None:
    """``xdl_clean_mmatch`` for each often-matching line: discarded amid discarded lines.

    Only runs of unkept lines holding a discarded one can discard such a line; the verdicts
    are all read before any is written, as xdiff reads them.
    """
    verdicts = []
    for run in _AMID.finditer(action):
        start, end = run.span()
        at = action.find(INVESTIGATE, start, end)
        while at >= 0:
            verdicts.append((at, DISCARD if _amid_discards(action, at) else KEEP))
            at = action.find(INVESTIGATE, at + 1, end)
    at = action.find(INVESTIGATE)
    while at >= 0:
        action[at] = KEEP
        at = action.find(INVESTIGATE, at + 1)
    for at, found in verdicts:
        action[at] = found


def _amid_discards(action: bytearray, at: int) -> bool:
    """Run ``xdl_clean_mmatch``: whether an often-matching line lies in a run of discarded ones.

    The runs either side reach to the nearest kept line, at most :data:`SIMSCAN_WINDOW` lines.
    """
    low = max(0, at - SIMSCAN_WINDOW, action.rfind(KEEP, 0, at) + 1)
    before = action.count(DISCARD, low, at)
    if not before:
        return False
    high = min(len(action), at + SIMSCAN_WINDOW + 1)
    kept = action.find(KEEP, at + 1, high)
    high = high if kept < 0 else kept
    after = action.count(DISCARD, at + 1, high)
    if not after:
        return False
    often = high - low - before - after + 1  # the line itself counted in both runs
    return often * KPDIS_RUN < often + before + after


def _divide(
    a: list[bytes],
    b: list[bytes],
    at_a: list[int],
    at_b: list[int],
    gone: bytearray,
    added: bytearray,
) -> None:
    """``xdl_recs_cmp``: mark the lines no middle snake keeps, box by box."""
    diagonals = len(a) + len(b) + 3
    forward = [0] * diagonals
    backward = [0] * diagonals
    zero = len(b) + 1  # diagonal 0's place in the two vectors
    most_cost = max(_root(diagonals), MAX_COST_MIN)
    boxes = [(0, len(a), 0, len(b), False)]
    while boxes:
        off1, lim1, off2, lim2, need_min = boxes.pop()
        if off1 < lim1 and off2 < lim2 and a[off1] == b[off2]:
            start = off1
            off1 = _run_down(a, b, off1, off2, lim1, lim2)
            off2 += off1 - start
        if off1 < lim1 and off2 < lim2 and a[lim1 - 1] == b[lim2 - 1]:
            end = lim1
            lim1 = _run_up(a, b, lim1, lim2, off1, off2)
            lim2 -= end - lim1
        if off1 == lim1:
            for index in range(off2, lim2):
                added[at_b[index]] = 1
        elif off2 == lim2:
            for index in range(off1, lim1):
                gone[at_a[index]] = 1
        else:
            box = (off1, lim1, off2, lim2)
            i1, i2, min_lo, min_hi = _split(a, b, box, forward, backward, zero, need_min, most_cost)
            boxes.append((i1, lim1, i2, lim2, min_hi))
            boxes.append((off1, i1, off2, i2, min_lo))


def _line_counts(text: Text, start: int, end: int, cut: int, middle: int) -> tuple[int, int, int]:
    """The lines of ``text`` before byte ``start``, in its last ``cut`` bytes, and before them.

    The last are those from byte ``end`` to the cut; ``middle`` lines lie between ``start``
    and ``end``. Where the text's own count is known, the shorter of two stretches is counted
    and the other found from it.
    """
    data, total = text.data, text._count
    if total < 0:
        head, from_end = data.count(b"\n", 0, start), data.count(b"\n", end)
    elif start <= len(data) - end:
        head = data.count(b"\n", 0, start)
        from_end = total - head - middle
    else:
        from_end = data.count(b"\n", end)
        head = total - from_end - middle
    if cut <= len(data) - cut - end:
        cut_lines = data.count(b"\n", len(data) - cut)
    else:
        cut_lines = from_end - data.count(b"\n", end, len(data) - cut)
    return head, cut_lines, from_end - cut_lines


def _split(
    a: list[bytes],
    b: list[bytes],
    box: Box,
    kvdf: list[int],
    kvdb: list[int],
    zero: int,
    need_min: bool,
    most_cost: int,
) -> tuple[int, int, bool, bool]:
    """``xdl_split``: where a box's middle snake lies, found from both corners at once.

    Returns the split point and whether each half must be searched in full. Past
    :data:`HEUR_MIN_COST` a far-reaching snake is taken as the split, and past ``most_cost``
    the furthest point reached, as xdiff does: the script is then not the shortest, but the
    one git finds. ``kvdf`` and ``kvdb`` hold each diagonal's furthest reach, diagonal 0 at
    ``zero``.
    """
    off1, lim1, off2, lim2 = box
    kvdf[off1 - off2 + zero] = off1
    kvdb[lim1 - lim2 + zero] = lim1
    reach = [off1 - off2, off1 - off2, lim1 - lim2, lim1 - lim2]  # fmin, fmax, bmin, bmax
    cost = 0
    while True:
        cost += 1
        forward_snake, met = _forward(a, b, box, kvdf, kvdb, zero, reach)
        if met is not None:
            return met
        backward_snake, met = _backward(a, b, box, kvdf, kvdb, zero, reach)
        if met is not None:
            return met
        if need_min:
            continue
        if (forward_snake or backward_snake) and cost > HEUR_MIN_COST:
            found = _good_snake(a, b, box, kvdf, kvdb, zero, cost, reach)
            if found is not None:
                return found
        if cost >= most_cost:
            return _furthest(box, kvdf, kvdb, zero, reach)


def _forward(
    a: list[bytes],
    b: list[bytes],
    box: Box,
    kvdf: list[int],
    kvdb: list[int],
    zero: int,
    reach: list[int],
) -> tuple[bool, tuple[int, int, bool, bool] | None]:
    """One round of xdl_split's search from the top left corner: one edit further.

    Returns whether it ran a long snake, and the split if it met the other search.
    """
    off1, lim1, off2, lim2 = box
    fmin, fmax, bmin, bmax = reach
    odd = (off1 - off2 - lim1 + lim2) & 1
    if fmin > off1 - lim2:
        fmin -= 1
        kvdf[fmin - 1 + zero] = -1
    else:
        fmin += 1
    if fmax < lim1 - off2:
        fmax += 1
        kvdf[fmax + 1 + zero] = -1
    else:
        fmax -= 1
    reach[0], reach[1] = fmin, fmax
    got_snake = False
    for at in range(fmax + zero, fmin - 1 + zero, -2):
        i1 = kvdf[at - 1] + 1 if kvdf[at - 1] >= kvdf[at + 1] else kvdf[at + 1]
        i2 = i1 - at + zero
        if i1 < lim1 and i2 < lim2 and a[i1] == b[i2]:
            start = i1
            i1 = _run_down(a, b, i1, i2, lim1, lim2)
            i2 = i1 - at + zero
            got_snake = got_snake or i1 - start > SNAKE_CNT
        kvdf[at] = i1
        if odd and bmin + zero <= at <= bmax + zero and kvdb[at] <= i1:
            return got_snake, (i1, i2, True, True)
    return got_snake, None


def _backward(
    a: list[bytes],
    b: list[bytes],
    box: Box,
    kvdf: list[int],
    kvdb: list[int],
    zero: int,
    reach: list[int],
) -> tuple[bool, tuple[int, int, bool, bool] | None]:
    """One round of xdl_split's search from the bottom right corner: one edit further."""
    off1, lim1, off2, lim2 = box
    fmin, fmax, bmin, bmax = reach
    odd = (off1 - off2 - lim1 + lim2) & 1
    if bmin > off1 - lim2:
        bmin -= 1
        kvdb[bmin - 1 + zero] = LINE_MAX
    else:
        bmin += 1
    if bmax < lim1 - off2:
        bmax += 1
        kvdb[bmax + 1 + zero] = LINE_MAX
    else:
        bmax -= 1
    reach[2], reach[3] = bmin, bmax
    got_snake = False
    for at in range(bmax + zero, bmin - 1 + zero, -2):
        i1 = kvdb[at - 1] if kvdb[at - 1] < kvdb[at + 1] else kvdb[at + 1] - 1
        i2 = i1 - at + zero
        if i1 > off1 and i2 > off2 and a[i1 - 1] == b[i2 - 1]:
            start = i1
            i1 = _run_up(a, b, i1, i2, off1, off2)
            i2 = i1 - at + zero
            got_snake = got_snake or start - i1 > SNAKE_CNT
        kvdb[at] = i1
        if not odd and fmin + zero <= at <= fmax + zero and i1 <= kvdf[at]:
            return got_snake, (i1, i2, True, True)
    return got_snake, None


def _good_snake(
    a: list[bytes],
    b: list[bytes],
    box: Box,
    kvdf: list[int],
    kvdb: list[int],
    zero: int,
    cost: int,
    ranges: list[int],
) -> tuple[int, int, bool, bool] | None:
    """xdl_split's heuristic: a diagonal that went far and ends in a snake, if one did."""
    off1, lim1, off2, lim2 = box
    fmin, fmax, bmin, bmax = ranges
    fmid, bmid = off1 - off2, lim1 - lim2
    best, point = 0, (0, 0)
    for d in range(fmax, fmin - 1, -2):
        i1 = kvdf[d + zero]
        i2 = i1 - d
        v = (i1 - off1) + (i2 - off2) - abs(d - fmid)
        if (
            v > K_HEUR * cost
            and v > best
            and off1 + SNAKE_CNT <= i1 < lim1
            and off2 + SNAKE_CNT <= i2 < lim2
            and a[i1 - SNAKE_CNT : i1] == b[i2 - SNAKE_CNT : i2]
        ):
            best, point = v, (i1, i2)
    if best > 0:
        return point[0], point[1], True, False
    for d in range(bmax, bmin - 1, -2):
        i1 = kvdb[d + zero]
        i2 = i1 - d
        v = (lim1 - i1) + (lim2 - i2) - abs(d - bmid)
        if (
            v > K_HEUR * cost
            and v > best
            and off1 < i1 <= lim1 - SNAKE_CNT
            and off2 < i2 <= lim2 - SNAKE_CNT
            and a[i1 : i1 + SNAKE_CNT] == b[i2 : i2 + SNAKE_CNT]
        ):
            best, point = v, (i1, i2)
    if best > 0:
        return point[0], point[1], False, True
    return None


def _furthest(
    box: Box,
    kvdf: list[int],
    kvdb: list[int],
    zero: int,
    ranges: list[int],
) -> tuple[int, int, bool, bool]:
    """xdl_split past its cost: the point either search reached furthest, by ``i1 + i2``."""
    off1, lim1, off2, lim2 = box
    fmin, fmax, bmin, bmax = ranges
    fbest = fbest1 = -1
    for d in range(fmax, fmin - 1, -2):
        i1 = min(kvdf[d + zero], lim1)
        i2 = i1 - d
        if lim2 < i2:
            i1, i2 = lim2 + d, lim2
        if fbest < i1 + i2:
            fbest, fbest1 = i1 + i2, i1
    bbest = bbest1 = LINE_MAX
    for d in range(bmax, bmin - 1, -2):
        i1 = max(off1, kvdb[d + zero])
        i2 = i1 - d
        if i2 < off2:
            i1, i2 = off2 + d, off2
        if i1 + i2 < bbest:
            bbest, bbest1 = i1 + i2, i1
    if (lim1 + lim2) - bbest < fbest - (off1 + off2):
        return fbest1, fbest - fbest1, True, False
    return bbest1, bbest - bbest1, False, True


def _run_down(a: list[bytes], b: list[bytes], x: int, y: int, lim1: int, lim2: int) -> int:
    """How far the diagonal from ``(x, y)`` runs on equal lines: the ``x`` where it stops.

    Whole slices are compared (in C), doubling while they match, then halving around the
    first difference, so a long run of unchanged lines costs a few comparisons rather than
    one Python step a line.
    """
    step, grow = 4, True
    while step:
        size = min(step, lim1 - x, lim2 - y)
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


def _run_up(a: list[bytes], b: list[bytes], x: int, y: int, off1: int, off2: int) -> int:
    """:func:`_run_down` backwards: the ``x`` where the diagonal ending at ``(x, y)`` starts."""
    step, grow = 4, True
    while step:
        size = min(step, x - off1, y - off2)
        if size <= 0:
            break
        if a[x - size : x] == b[y - size : y]:
            x -= size
            y -= size
            step = step * 2 if grow else step // 2
        else:
            grow = False
            step //= 2
    return x


def _root(size: int) -> int:
    """A power of two near the square root, by shifts (xdiff's ``xdl_bogosqrt``)."""
    root = 1
    while size > 0:
        root <<= 1
        size >>= 2
    return root


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
