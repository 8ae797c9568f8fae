"""MCP server records, their declarations, their index maps, and who changed what.

* :class:`McpServer` — how to reach one server (the stdio program it runs, one of the programs
  the operator allows — :mod:`tmsite.servers.programs`; or a Streamable HTTP URL, bounded by
  the operator's address policy), the setting or environment variable holding its token, its
  sources and licence basis, and what happened the last time the box asked it.
* :class:`ServerDeclaration` — one snapshot of what it declared (handshake and every listing),
  when and how long it took. The newest is what the namespace serves.
* :class:`MapEntry` — one path of its index map: a path template, the tool it runs, how path
  segments become arguments, the kind of thing it returns and a confidence. Derived entries are
  the index driver's (``origin = derived``); once a maintainer changes one, ``touched`` is set
  and re-deriving leaves it alone.
* :class:`MapEntryChange` and :class:`ServerChange` — every change, field by field, with who and
  when (``changed_by_name`` is ``"index driver"`` for derivation). Rows are never edited.

Spec: MCP, OP4.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from typing_extensions import override

from tmsite.mcpclient import stdio
from tmsite.servers import grammar, programs

CONFIDENCES = [("exact", "exact"), ("inferred", "inferred"), ("low", "low")]
TRANSPORTS = [("stdio", "stdio"), ("http", "Streamable HTTP")]
OUTCOMES = [
    ("", "never asked"),
    ("answered", "answered"),
    ("gated", "gated"),
    ("unreachable", "unreachable"),
]
DEFAULT_ENV_ALLOW = list(stdio.DEFAULT_ENV_ALLOW)


def _default_env_allow() -> list[str]:
    """The env allow-list default of the first migration (the field is gone since 0003)."""
    return list(DEFAULT_ENV_ALLOW)


class McpServer(models.Model):
    """One MCP server the box reads."""

    #: Fields a maintainer changes in the admin; each change is kept as a ServerChange.
    CORRECTABLE: ClassVar[tuple[str, ...]] = (
        "description",
        "transport",
        "program",
        "url",
        "token_setting",
        "sources",
        "licence_basis",
        "start_timeout",
        "call_timeout",
    )

    name = models.SlugField(max_length=50, unique=True, help_text="Its segment under mcp/.")
    description = models.TextField(blank=True, help_text="What it is, for people and models.")
    transport = models.CharField(max_length=5, choices=TRANSPORTS, default="stdio")
    program = models.CharField(
        max_length=50,
        blank=True,
        help_text="stdio: which of the programs the operator allows it runs (its argument list, "
        "working directory and environment are the operator's, in TM_STDIO_PROGRAMS).",
    )
    url = models.CharField(max_length=2000, blank=True, help_text="Streamable HTTP endpoint.")
    token_setting = models.CharField(
        max_length=128,
        blank=True,
        help_text="Name of the setting (or environment variable) holding its token; empty: "
        "none needed. stdio servers get it in their environment under that name.",
    )
    sources = models.JSONField(
        default=list, blank=True, help_text="Where its data comes from (strings)."
    )
    licence_basis = models.TextField(
        blank=True, help_text="Why the box may republish what it answers."
    )
    start_timeout = models.FloatField(default=10.0, help_text="Seconds for spawn + handshake.")
    call_timeout = models.FloatField(default=15.0, help_text="Seconds for each later request.")
    last_asked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_outcome = models.CharField(
        max_length=12, choices=OUTCOMES, default="", blank=True, editable=False
    )
    last_failure = models.CharField(
        max_length=40, blank=True, editable=False, help_text="What failed (timeout, spawn …)."
    )
    last_detail = models.TextField(blank=True, editable=False)
    last_answered_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    map_version = models.PositiveBigIntegerField(
        default=0,
        editable=False,
        help_text="Bumped whenever one of its map entries or declarations is saved or deleted: "
        "the change stamp every worker's memo of them checks.",
    )

    class Meta:
        ordering = ("name",)
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.name

    @override
    def clean(self) -> None:
        errors: dict[str, str] = {}
        if not grammar.SERVER_NAME.fullmatch(self.name or ""):
            errors["name"] = "lowercase letters, digits and '-'"
        if self.transport == "stdio":
            errors.update(self._stdio_errors())
        elif self.transport == "http":
            errors.update(self._http_errors())
        errors.update(self._setting_errors())
        if errors:
            raise ValidationError(errors)

    def _stdio_errors(self) -> dict[str, str]:
        """What is wrong with a stdio record's program: it must be one the operator allows."""
        try:
            names = programs.allowed()
        except programs.ProgramsUnreadable as exc:
            return {"program": f"the operator's programs cannot be read: {exc}"}
        if self.program not in names:
            return {"program": f"one of the programs the operator allows: {sorted(names)}"}
        return {}

    def _http_errors(self) -> dict[str, str]:
        """What is wrong with an HTTP record's URL (a scheme, a host, no credentials)."""
        parts = urlsplit(self.url or "")
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            return {"url": "an http:// or https:// URL"}
        if parts.username or parts.password:
            return {"url": "no credentials in the URL: name a token setting instead"}
        refusal = programs.url_refusal(self.url)
        if refusal is not None:
            return {"url": str(refusal)}
        return {}

    def _setting_errors(self) -> dict[str, str]:
        """What is wrong with the fields both transports share, by field."""
        errors: dict[str, str] = {}
        if self.token_setting and not grammar.ENV_NAME.fullmatch(self.token_setting):
            errors["token_setting"] = "the name of a setting or environment variable"
        if not isinstance(self.sources, list) or not all(isinstance(s, str) for s in self.sources):
            errors["sources"] = "a list of strings"
        for name in ("start_timeout", "call_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 < value <= 600:
                errors[name] = "seconds, more than 0 and at most 600"
        return errors

    def launch(self) -> programs.Program:
        """The program a stdio record runs, as the operator allows it now.

        Raises:
            ProgramNotAllowed: the operator does not allow it (``tm.W030``): nothing starts.
        """
        return programs.program_for(self.name, self.program)

    def latest_declaration(self) -> ServerDeclaration | None:
        """What the server declared the last time it answered, or None if it never did."""
        return self.declarations.order_by("-asked_at", "-id").first()


class ServerDeclaration(models.Model):
    """What one server declared when asked once: its handshake and every listing (capped)."""

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="declarations")
    asked_at = models.DateTimeField()
    seconds = models.FloatField(help_text="How long the probe took.")
    protocol_version = models.CharField(max_length=20)
    era = models.CharField(max_length=12)
    capabilities = models.JSONField(default=dict)
    server_info = models.JSONField(default=dict)
    instructions = models.TextField(blank=True)
    tools = models.JSONField(default=list)
    resources = models.JSONField(default=list)
    resource_templates = models.JSONField(default=list)
    prompts = models.JSONField(default=list)
    listing_errors = models.JSONField(
        default=dict, help_text="Listings that failed: name → what happened."
    )
    dropped = models.JSONField(
        default=dict, help_text="Items left out (over the caps, or nameless): listing → count."
    )

    class Meta:
        ordering = ("-asked_at", "-id")
        get_latest_by = "asked_at"

    def __str__(self) -> str:
        return f"{self.server.name} at {self.asked_at:%Y-%m-%d %H:%M:%S}"

    def tool(self, name: str) -> dict[str, Any] | None:
        """The tool called ``name`` as the server described it, or None."""
        for tool in self.tools:
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool
        return None


class MapEntry(models.Model):
    """One path of a server's index map: which tool reads the thing it names, and how."""

    CORRECTABLE: ClassVar[tuple[str, ...]] = (
        "path_template",
        "tool",
        "arguments",
        "kind",
        "confidence",
        "notes",
    )

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="map_entries")
    path_template = models.CharField(max_length=300, help_text="e.g. element/{symbol}")
    tool = models.CharField(max_length=256, help_text="The tool the path runs.")
    arguments = models.JSONField(
        default=dict,
        blank=True,
        help_text='Tool argument → "{variable}" (a path segment) or a constant.',
    )
    kind = models.CharField(max_length=40, help_text="The kind of thing the tool returns.")
    confidence = models.CharField(max_length=8, choices=CONFIDENCES, default="low")
    notes = models.TextField(blank=True)
    origin = models.CharField(
        max_length=10,
        choices=[("derived", "derived"), ("maintainer", "maintainer")],
        default="maintainer",
        editable=False,
    )
    derived_key = models.CharField(
        max_length=256, blank=True, editable=False, help_text="The tool it was derived from."
    )
    derived_reason = models.TextField(blank=True, editable=False)
    touched = models.BooleanField(
        default=False, editable=False, help_text="A maintainer changed it: re-deriving skips it."
    )
    updated_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ("server__name", "path_template")
        verbose_name = "map entry"
        verbose_name_plural = "map entries"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=("server", "path_template"), name="tm_map_path_unique")
        ]

    def __str__(self) -> str:
        return f"{self.server.name}/{self.path_template}"

    @override
    def clean(self) -> None:
        errors: dict[str, str] = {}
        try:
            grammar.parse_template(self.path_template)
            grammar.check_arguments(self.arguments, self.path_template)
        except grammar.GrammarError as exc:
            errors["path_template"] = str(exc)
        try:
            grammar.check_kind(self.kind)
        except grammar.GrammarError as exc:
            errors["kind"] = str(exc)
        if not self.tool:
            errors["tool"] = "the tool the path runs"
        if errors:
            raise ValidationError(errors)


class _Change(models.Model):
    field = models.CharField(max_length=40)
    old = models.JSONField(null=True)
    new = models.JSONField(null=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_by_name = models.CharField(max_length=150, help_text="Kept if the user goes.")
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class MapEntryChange(_Change):
    """One change of one map entry: added, derived, corrected, re-derived or removed."""

    ACTIONS: ClassVar[list[tuple[str, str]]] = [
        ("derive", "derived"),
        ("rederive", "re-derived"),
        ("add", "added by a maintainer"),
        ("correct", "corrected by a maintainer"),
        ("remove", "removed"),
    ]

    entry = models.ForeignKey(
        MapEntry, null=True, on_delete=models.SET_NULL, related_name="changes"
    )
    server_name = models.CharField(max_length=50)
    path_template = models.CharField(max_length=300)
    action = models.CharField(max_length=10, choices=ACTIONS)

    class Meta:
        ordering = ("changed_at", "id")
        verbose_name = "map entry change"

    def __str__(self) -> str:
        return f"{self.server_name}/{self.path_template} {self.action} {self.field}"


class ServerChange(_Change):
    """One change of one server record, made in the admin or by a command."""

    server = models.ForeignKey(
        McpServer, null=True, on_delete=models.SET_NULL, related_name="changes"
    )
    server_name = models.CharField(max_length=50)

    class Meta:
        ordering = ("changed_at", "id")
        verbose_name = "server record change"

    def __str__(self) -> str:
        return f"{self.server_name} {self.field}"


def _bump_map_version(sender: type[models.Model], instance: Any, **kwargs: Any) -> None:
    """A map entry or a declaration changed: its server's ``map_version`` moves on.

    In the database, so every worker's memo of the map and declaration is stale from the next
    read.
    """
    McpServer.objects.filter(pk=instance.server_id).update(map_version=models.F("map_version") + 1)


for _model in (MapEntry, ServerDeclaration):
    models.signals.post_save.connect(
        _bump_map_version, sender=_model, dispatch_uid=f"map-version-{_model.__name__}"
    )
    models.signals.post_delete.connect(
        _bump_map_version, sender=_model, dispatch_uid=f"map-version-gone-{_model.__name__}"
    )
