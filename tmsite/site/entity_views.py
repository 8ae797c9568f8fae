"""The entity pages of the site: one page per game the autopsy boarded.

``/autopsy/games/<key>`` (``key``: the game's 12 hex digits) shows a game as its record states
it: its patterns with how many named routines show each, the lessons that measure it, and its
named routines. The page rule is :func:`game_path`; the ``entity`` mount links a game
``tm:renders-as`` to this page, and the page ``tm:source`` back to the game. The pages are
listed for the sitemap (and the ``http`` mount) through
:func:`tmsite.mounts.http.pages.register_pages`.

Spec: OP3.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.template import engines
from django.views.decorators.http import require_safe

from tmsite.entities import models as m
from tmsite.entities import records as R
from tmsite.mounts.http import pages
from tmsite.site import views

#: Where the game pages live.
GAMES_PREFIX = "/autopsy/games/"

_TEMPLATE = engines["django"].from_string(
    """{% extends "tm_site/base.html" %}
{% block main %}
<article class="entity game">
<h1>{{ game.name }}</h1>
<dl>
  <dt>Key</dt><dd><code>{{ game.key }}</code></dd>
  <dt>SHA-256</dt><dd><code>{{ game.sha256 }}</code></dd>
  <dt>Mapper</dt><dd>{{ game.mapper }}</dd>
  <dt>PRG banks</dt><dd>{{ game.prg }}</dd>
  <dt>CHR banks</dt><dd>{{ game.chr }}</dd>
</dl>
<h2>Patterns</h2>
<table>
<thead><tr><th>Pattern</th><th>Named routines</th></tr></thead>
<tbody>
{% for p in patterns %}<tr><td>{{ p.key }}</td><td>{{ p.count }}</td></tr>
{% endfor %}</tbody>
</table>
{% if lessons %}<h2>Lessons that measure it</h2>
<ul>{% for x in lessons %}<li>{{ x.key }}</li>{% endfor %}</ul>
{% endif %}<h2>Named routines ({{ routine_total }})</h2>
<ul class="routines">{% for r in routines %}<li><code>{{ r.key }}</code></li>{% endfor %}</ul>
{% if routine_more %}<p>and {{ routine_more }} more.</p>{% endif %}
</article>
{% endblock %}
"""
)


def game_path(key: str) -> str:
    """The URL path of a game's page."""
    return f"{GAMES_PREFIX}{key}"


def game_pages() -> Iterable[pages.SitePage]:
    """Every game page, in record order (none while the tables are not there)."""
    try:
        keys = list(m.Game.objects.order_by("position").values_list("key", flat=True))
    except DatabaseError:
        return []
    return [pages.SitePage(game_path(key), "en") for key in keys]


pages.register_pages("entity", game_pages)


@require_safe
def game(request: HttpRequest, key: str) -> HttpResponseBase:
    """One game's page; a key that is not a game's is the site's 404."""
    try:
        entity = R.get(R.Ref.of("game", key))
    except R.InvalidKey:
        entity = None
    if entity is None:
        return views.not_found(request)
    context = views._frame(request, "en", title=entity.fields["name"], here="", other=None)
    context.update(
        {
            "game": entity.fields,
            "patterns": [i.as_json() for i in entity.related["pattern"].items],
            "lessons": [i.as_json() for i in entity.related["measured-by"].items],
            "routines": [i.as_json() for i in entity.related["routine"].items],
            "routine_total": entity.related["routine"].total,
            "routine_more": max(
                0, entity.related["routine"].total - len(entity.related["routine"].items)
            ),
        }
    )
    response = HttpResponse(_TEMPLATE.render(context, request))
    return views._finish(request, response, None)
