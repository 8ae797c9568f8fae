"""The autopsy records as Django models.

The records in ``data/autopsy.json`` and ``data/lessons.json`` are the source of truth; these
tables are filled from them by :mod:`tmsite.entities.loaders` and refilled on every reload. Each
entity keeps the record's own values of the fields a maintainer may correct (``recorded``) and its
place in the record file (``position``), so its JSON pointer can be rebuilt, and when the record
files its read is made from last changed as the load found them (``data_modified``: read there,
so every worker dates a thing alike, and a file touched since the load does not re-date it). A
hand correction is a :class:`Correction` row: who, when, which field, the value, and what the
record said; reloads apply the latest correction of each field again, so corrections outlive
reloads.

Spec: ENT, OP4, TRAILS.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from tmsite.entities.record_files import ROUTINE_KINDS

_DATA_MODIFIED = (
    "When the record files its read is made from last changed, as of the load that wrote it "
    "(their modification times then); empty when the load did not know."
)


class Pattern(models.Model):
    """A pattern the autopsy rules look for (e.g. ``pad-poll``)."""

    #: Fields a maintainer may correct in the admin; every other field is the record's.
    CORRECTABLE: ClassVar[tuple[str, ...]] = ("description",)

    key = models.CharField(max_length=64, unique=True)
    description = models.TextField()
    position = models.PositiveIntegerField(help_text="Order in the record's ``patterns``.")
    recorded = models.JSONField(default=dict, editable=False)
    load_token = models.CharField(max_length=32, editable=False, db_index=True)
    data_modified = models.DateTimeField(null=True, editable=False, help_text=_DATA_MODIFIED)

    class Meta:
        ordering = ("position",)

    def __str__(self) -> str:
        return self.key


class Game(models.Model):
    """A game the autopsy boarded, keyed by the 12-hex prefix of its sha256."""

    CORRECTABLE: ClassVar[tuple[str, ...]] = ("name",)

    key = models.CharField(max_length=12, unique=True)
    name = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    mapper = models.PositiveIntegerField()
    prg = models.PositiveIntegerField(help_text="PRG banks of 16 KiB.")
    chr = models.PositiveIntegerField(help_text="CHR banks of 8 KiB.")
    extra = models.JSONField(default=dict, help_text="The record's other fields, as written.")
    position = models.PositiveIntegerField(help_text="Index in the record's ``games``.")
    recorded = models.JSONField(default=dict, editable=False)
    load_token = models.CharField(max_length=32, editable=False, db_index=True)
    data_modified = models.DateTimeField(null=True, editable=False, help_text=_DATA_MODIFIED)
    patterns: models.ManyToManyField[Pattern, GamePattern] = models.ManyToManyField(
        Pattern, through="GamePattern", related_name="games"
    )

    class Meta:
        ordering = ("position",)

    def __str__(self) -> str:
        return f"{self.name} ({self.key})"


class Routine(models.Model):
    """A routine a rule named in a game, keyed inside its game by bank and address."""

    CORRECTABLE: ClassVar[tuple[str, ...]] = ("name", "kind")

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="routines")
    bank = models.PositiveSmallIntegerField(help_text="PRG bank number (``prg<bank>``).")
    addr = models.PositiveIntegerField(help_text="CPU address, 0..65535.")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=[(k, k) for k in ROUTINE_KINDS])
    extra = models.JSONField(default=dict, help_text="The record's other fields, as written.")
    position = models.PositiveIntegerField(help_text="Index in the game's ``routine_list``.")
    recorded = models.JSONField(default=dict, editable=False)
    load_token = models.CharField(max_length=32, editable=False, db_index=True)
    data_modified = models.DateTimeField(null=True, editable=False, help_text=_DATA_MODIFIED)
    patterns: models.ManyToManyField[Pattern, RoutinePattern] = models.ManyToManyField(
        Pattern, through="RoutinePattern", related_name="routines"
    )

    class Meta:
        ordering = ("game__position", "position")
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("game", "bank", "addr"), name="tm_routine_unique_addr")
        ]

    @property
    def routine_key(self) -> str:
        """The routine's key inside its game, e.g. ``b0-8E5C``."""
        return f"b{self.bank}-{self.addr:04X}"

    def __str__(self) -> str:
        return f"{self.name} ({self.routine_key})"


class Lesson(models.Model):
    """A lesson: a cartridge source tree that measures one game."""

    CORRECTABLE: ClassVar[tuple[str, ...]] = ("title", "kind", "description")

    key = models.CharField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=40)
    description = models.TextField()
    game = models.ForeignKey(Game, on_delete=models.PROTECT, related_name="lessons")
    tree = models.CharField(max_length=200, help_text="Its source tree in the repository.")
    extra = models.JSONField(default=dict, help_text="The record's other fields, as written.")
    position = models.PositiveIntegerField(help_text="Index in the record's ``lessons``.")
    recorded = models.JSONField(default=dict, editable=False)
    load_token = models.CharField(max_length=32, editable=False, db_index=True)
    data_modified = models.DateTimeField(null=True, editable=False, help_text=_DATA_MODIFIED)
    patterns: models.ManyToManyField[Pattern, LessonPattern] = models.ManyToManyField(
        Pattern, through="LessonPattern", related_name="lessons"
    )

    class Meta:
        ordering = ("position",)

    def __str__(self) -> str:
        return self.key


class GamePattern(models.Model):
    """How many of a game's named routines show a pattern."""

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="pattern_counts")
    pattern = models.ForeignKey(Pattern, on_delete=models.CASCADE, related_name="game_counts")
    count = models.PositiveIntegerField()

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("game", "pattern"), name="tm_gamepattern_unique")
        ]

    def __str__(self) -> str:
        return f"{self.pattern_id}×{self.count}"


class RoutinePattern(models.Model):
    """A routine is an instance of a pattern, by the evidence of a rule."""

    routine = models.ForeignKey(Routine, on_delete=models.CASCADE, related_name="instances")
    pattern = models.ForeignKey(Pattern, on_delete=models.CASCADE, related_name="instances")
    evidence = models.JSONField(default=dict)
    position = models.PositiveIntegerField(help_text="Index in the routine's ``is``.")

    class Meta:
        ordering = ("position",)
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("routine", "pattern"), name="tm_routinepattern_unique")
        ]

    def __str__(self) -> str:
        return str(self.evidence.get("by", ""))


class LessonPattern(models.Model):
    """How many times a lesson shows a pattern."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="pattern_counts")
    pattern = models.ForeignKey(Pattern, on_delete=models.CASCADE, related_name="lesson_counts")
    count = models.PositiveIntegerField()

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("lesson", "pattern"), name="tm_lessonpattern_unique")
        ]

    def __str__(self) -> str:
        return f"{self.pattern_id}×{self.count}"


class Correction(models.Model):
    """A maintainer's correction of one field of one entity, kept across reloads.

    ``key`` is the entity's key; a routine's is ``<game key>/<routine key>``. Rows are never
    edited or deleted: the latest row of an (entity, key, field) is the one applied, so the
    history of a field is its rows in time order.
    """

    ENTITIES: ClassVar[list[tuple[str, str]]] = [
        ("pattern", "pattern"),
        ("game", "game"),
        ("routine", "routine"),
        ("lesson", "lesson"),
    ]

    entity = models.CharField(max_length=10, choices=ENTITIES)
    key = models.CharField(max_length=100)
    field = models.CharField(max_length=40)
    value = models.JSONField(help_text="The corrected value.")
    record_value = models.JSONField(null=True, help_text="What the record said when corrected.")
    corrected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    corrected_by_name = models.CharField(max_length=150, help_text="Kept if the user goes.")
    corrected_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("corrected_at", "id")
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=("entity", "key", "field", "corrected_at"), name="tm_corr_lookup")
        ]

    def __str__(self) -> str:
        return f"{self.entity} {self.key} {self.field}"


class TrailFile(models.Model):
    """A trail file of ``notes/trails/`` as last indexed: its name, size and modification time.

    The index is rebuilt whenever the files on disk no longer match these rows, or a trail was
    corrected in the admin since (:mod:`tmsite.trails.index`); ``manage.py tm_index_trails``
    rebuilds it by hand.
    """

    name = models.CharField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    mtime_ns = models.BigIntegerField()
    size = models.BigIntegerField()

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class TrailStep(models.Model):
    """One step of one trail as served (its file, or its correction), indexed by its target."""

    trail = models.CharField(max_length=64)
    position = models.PositiveIntegerField(help_text="1-based place of the step in its trail.")
    uri = models.CharField(max_length=1000, help_text="The step's address, canonical.")
    target = models.CharField(
        max_length=1000, db_index=True, help_text="The address without parameters but at=."
    )
    note = models.TextField()

    class Meta:
        ordering = ("trail", "position")
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("trail", "position"), name="tm_trailstep_unique")
        ]

    def __str__(self) -> str:
        return f"{self.trail} #{self.position}"
