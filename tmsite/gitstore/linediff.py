"""A line diff shaped as git's xdiff shapes it, for blame.

Myers' O(ND) algorithm finds a shortest edit script between two versions of a file (lines
interned as integers first, so a comparison is an integer's; the common head and tail, and, as
xdiff discards them, the lines the other side does not hold at all are left out of the search).
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

#: Past this many edits the script is not searched; the caller uses another matcher.
MAX_EDITS = 2000


def edit_flags(old: list[bytes], new: list[bytes]) -> tuple[list[bool], list[bool]] | None:
    """For each line of ``old`` and of ``new``, whether it is changed (deleted or inserted).

    None when the versions differ by more than :data:`MAX_EDITS` edits.
    """
    ids = {line: at for at, line in enumerate({*old, *new})}
    a = list(map(ids.__getitem__, old))
    b = list(map(ids.__getitem__, new))
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    # As xdiff's xdl_cleanup_records: a line the other side lacks is changed for certain and
    # left out of the search, which then only places the lines both sides hold.
    in_b = set(b[head : len(b) - tail])
    in_a = set(a[head : len(a) - tail])
    keep_a = [i for i in range(head, len(a) - tail) if a[i] in in_b]
    keep_b = [j for j in range(head, len(b) - tail) if b[j] in in_a]
    path = _myers([a[i] for i in keep_a], [b[j] for j in keep_b])
    if path is None:
        return None
    gone = [False] * head + [True] * (len(a) - head - tail) + [False] * tail
    added = [False] * head + [True] * (len(b) - head - tail) + [False] * tail
    for i, j in path:
        gone[keep_a[i]] = False
        added[keep_b[j]] = False
    _compact(a, gone, added, _Indents(old))
    _compact(b, added, gone, _Indents(new))
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
            x = _snake(a, b, x, x - k)
            y = x - k
            v[offset + k] = x
            if x >= n and y >= m:
                return _back(trace, v, offset, d, k, a, b)
    return None


def _snake(a: list[int], b: list[int], x: int, y: int) -> int:
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
    """xdiff's ``struct xdlgroup`` on the side being compacted: changed lines ``start:end``."""

    def __init__(self, flags: list[bool], recs: list[int], start: int) -> None:
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

    def __init__(self, flags: list[bool]) -> None:
        self.unchanged = [at for at, flag in enumerate(flags) if not flag]
        self.size = len(flags)
        self.index = 0

    def empty(self) -> bool:
        """Whether the group holds no changed line."""
        start = self.unchanged[self.index - 1] + 1 if self.index else 0
        end = self.unchanged[self.index] if self.index < len(self.unchanged) else self.size
        return end <= start


def _compact(recs: list[int], changed: list[bool], other: list[bool], indents: _Indents) -> None:
    """``xdl_change_compact`` on one side: slide each group of changes as git does.

    Groups are paired with the other side's by their index (the count of unchanged lines
    before them); empty groups are stepped over in one move rather than one at a time.
    """
    go = _Other(other)
    end, index = -1, -1
    while True:
        try:
            start = changed.index(True, end + 1)
        except ValueError:
            return
        index += start - end
        go.index = index
        g = _Group(changed, recs, start)
        _place(g, go, indents)
        end, index = g.end, go.index


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
