"""The prompts: one table, spoken by MCP and by REST (``/api/v1/prompts``).

MCP asks it through ``prompts/list``, ``prompts/get`` and ``completion/complete`` on
``ref/prompt``.

A prompt names its arguments, each with a completer that answers live values from the
namespace, and a builder that reads through ``tmsite.operations`` (the same reads the resource
methods make) and returns messages: a text, and resources embedded exactly as they were read,
links included. Nothing here knows a wire: ``tmsite.mcp.convert`` gives the shapes.

* ``first-session`` — the six exchanges from a cold connection to the source file behind a page,
  as a guided walk, each step filled with what the box answers for it now.
* ``explain-address`` — any ``tm://`` address: read it, read what its links point to, one step
  out, and say what it is.

Refusals are the namespace's own: an unknown prompt, an argument it does not take or a missing
required one is ``bad-argument`` (with ``valid`` and ``required``); an address that does not
parse is ``bad-uri``; one that does not resolve is the read's refusal (``not-found`` with
``nearest`` …).

Spec: PR1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from tmsite import operations
from tmsite.core.errors import BadArgument, Refusal
from tmsite.core.links import Link
from tmsite.core.types import Content, Template
from tmsite.core.uri import TmUri, parse

#: Link targets ``explain-address`` reads, one step out (the first ones, in link order).
FOLLOW_CAP = 8
#: Completion values a walk step shows inline.
SHOWN_VALUES = 10

#: The links of a page's source that step 6 names: back to the page, up, the same file in git.
BACK_RELS = frozenset(
    {"up", "tm:renders-as", "tm:repository", "tm:working-copy", "tm:generated-by"}
)

Completer = Callable[[str, Mapping[str, str]], list[str]]


@dataclass(frozen=True)
class Argument:
    """One argument of a prompt: what the client shows, whether it is needed, how it completes."""

    name: str
    title: str
    description: str
    required: bool
    complete: Completer

    def to_json(self) -> dict[str, object]:
        """The ``PromptArgument``: name, title, description, required."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "required": self.required,
        }


@dataclass(frozen=True)
class Message:
    """One message of a prompt: a text, or a resource embedded as it was read."""

    role: Literal["user", "assistant"]
    text: str | None = None
    resource: Content | None = None


@dataclass(frozen=True)
class Answer:
    """What ``prompts/get`` answers: a description of this rendering and its messages."""

    description: str
    messages: list[Message]


@dataclass(frozen=True)
class Prompt:
    """One prompt: its name, what the client shows, its arguments and the builder."""

    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]
    build: Callable[[Mapping[str, str]], Answer]

    def to_json(self) -> dict[str, object]:
        """The ``prompts/list`` entry (the same on every surface)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "arguments": [argument.to_json() for argument in self.arguments],
        }


# ---- completers: live values from the namespace ---------------------------------------------


def _children_starting(value: str, collection: str) -> list[str]:
    """The children of ``collection`` (its first page) whose address starts with ``value``.

    A collection that refuses to be read completes to nothing: completion is a hint.
    """
    try:
        body = operations.read(collection).body
    except Refusal:
        return []
    children = body.get("children") if isinstance(body, dict) else None
    if not isinstance(children, list):
        return []
    return [
        child["uri"]
        for child in children
        if isinstance(child, dict)
        and isinstance(child.get("uri"), str)
        and child["uri"].startswith(value)
    ]


def _addresses_under(value: str, stem: str) -> list[str]:
    """Addresses below ``stem`` that start with ``value``, listed from where it is typed.

    While ``value`` is still a prefix of ``stem`` the answer is ``stem`` and its children;
    after that, the children of the collection the last ``/`` typed names.
    """
    if "?" in value:
        return []
    if stem.startswith(value):
        return [*([stem] if value != stem else []), *_children_starting(value, stem)]
    if not value.startswith(stem):
        return []
    return _children_starting(value, value[: value.rfind("/") + 1])


def complete_address(value: str, context: Mapping[str, str]) -> list[str]:
    """Any address of this box, from the root down, one collection at a time."""
    return _addresses_under(value, f"tm://{operations.host()}/")


def complete_page(value: str, context: Mapping[str, str]) -> list[str]:
    """Pages of the ``http`` mount (and the collections that lead to them)."""
    return _addresses_under(value, f"tm://{operations.host()}/http/")


def _walk_templates() -> list[Template]:
    """The published templates that have arguments to complete."""
    return [item for item in operations.templates() if item.arguments]


def complete_template(value: str, context: Mapping[str, str]) -> list[str]:
    """The ``uriTemplate`` of every published template with arguments, as typed so far."""
    return [t.uri_template for t in _walk_templates() if t.uri_template.startswith(value)]


# ---- shared reads -------------------------------------------------------------------------

_EXPRESSION = re.compile(r"\{([+?]?)([^}]*)\}")


def match_template(template: str, address: str) -> dict[str, str] | None:
    """The variables of ``template`` an address fills, or None when it does not fit.

    The expressions the templates use: ``{name}`` is one segment, ``{+name}`` the rest of the
    path, ``{?a,b}`` an optional query (not captured).
    """
    pattern, at = "", 0
    for found in _EXPRESSION.finditer(template):
        pattern += re.escape(template[at : found.start()])
        operator, name = found.groups()
        if operator == "?":
            pattern += r"(?:\?.*)?"
        else:
            pattern += f"(?P<{name}>[^?]+)" if operator == "+" else f"(?P<{name}>[^/?]+)"
        at = found.end()
    pattern += re.escape(template[at:])
    matched = re.fullmatch(pattern, address)
    return None if matched is None else dict(matched.groupdict())


def _counted(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _described(content: Content) -> str:
    """What a read is, in a few words: kind, type, size, links."""
    body = content.body
    size = ""
    if isinstance(body, bytes):
        size = f", {_counted(len(body), 'byte', 'bytes')}"
    elif isinstance(body, str):
        size = f", {_counted(len(body), 'character', 'characters')}"
    elif isinstance(body, dict) and isinstance(body.get("children"), list):
        size = f", {_counted(len(body['children']), 'entry', 'entries')}"
    links = _counted(len(content.links), "link", "links")
    return f"{content.kind} ({content.mime_type}{size}, {links})"


def _link_line(link: Link) -> str:
    title = f" — {link.title}" if link.title else ""
    return f"{link.rel} → {link.href}{title}"


def _resource(content: Content) -> Message:
    return Message("user", resource=content)


# ---- first-session ------------------------------------------------------------------------


def _page(text: str) -> TmUri:
    """The page argument: an address below ``http/<site>/`` that is not a collection."""
    uri = parse(text)
    if uri.host and uri.mount == "http" and len(uri.path) >= 2 and not uri.collection:
        return uri.identity
    raise BadArgument(
        str(uri),
        "first-session starts from a page: an address below tm://<host>/http/<site>/ that "
        "does not end in /",
        valid=complete_page("", {}),
    )


def _template(text: str | None, source: str | None) -> Template:
    """The template named, or the first one the source file's address fits."""
    published = _walk_templates()
    if text:
        for item in published:
            if item.uri_template == text:
                return item
        raise BadArgument(
            None,
            f"no template with the uriTemplate {text!r} has arguments to complete",
            valid=[item.uri_template for item in published],
        )
    for item in published:
        if source is not None and match_template(item.uri_template, source) is not None:
            return item
    return published[0]


def _completion_step(template: Template, source: str | None) -> tuple[str, str]:
    """Step 4: the ``completion/complete`` request, and the values the box answers to it."""
    filled = match_template(template.uri_template, source) if source is not None else None
    if filled:
        argument = list(filled)[-1]
        whole = filled.pop(argument)
        directory, _, leaf = whole.rpartition("/")
        typed = f"{directory}/{leaf[:2]}" if directory else leaf[:2]
        context = filled
    else:
        argument, typed, context = template.arguments[0], "", {}
    request = (
        f'ref {{"type": "ref/resource", "uri": "{template.uri_template}"}}, argument '
        f'{{"name": "{argument}", "value": "{typed}"}}'
    )
    if context:
        pairs = ", ".join(f'"{key}": "{value}"' for key, value in context.items())
        request += f', context {{"arguments": {{{pairs}}}}}'
    try:
        values = operations.complete(template.uri_template, argument, typed, context)
    except Refusal as refusal:
        return request, f"the box refuses it ({refusal.reason}: {refusal.message})"
    shown = ", ".join(values[:SHOWN_VALUES]) or "nothing"
    more = f" and {len(values) - SHOWN_VALUES} more" if len(values) > SHOWN_VALUES else ""
    return request, f"the values that start that way — now {shown}{more}"


def first_session(arguments: Mapping[str, str]) -> Answer:
    """The six exchanges from a cold connection to the source behind ``page``, filled live."""
    page = _page(arguments["page"])
    page_text = str(page.with_params({"as": "text"}))
    read = operations.read(page_text)
    sources = [link for link in read.links if link.rel == "tm:source"]
    source = sources[0].href if sources else None
    template = _template(arguments.get("template"), source)
    collection = page.parent()
    assert collection is not None  # a page is below a site
    listing = operations.read(str(collection))
    request, answered = _completion_step(template, source)
    templates = operations.templates()
    root = f"tm://{operations.host()}/"
    first = operations.help_uri()
    named = f"name the first document to read, {first}" if first else f"say to start at {root}"
    steps = [
        "1. `initialize` (on 2026-07-28, `server/discover`): the capabilities and the "
        f"instructions. The instructions {named}.",
        f"2. `resources/templates/list`: {len(templates)} templates — the host list (tm://), the "
        f"root (tm://{operations.host()}/) and each mount's, each describing its grammar. The "
        f"one used below is {template.uri_template} ({template.title}).",
        f"3. Read {collection}: the section the page sits in, page by page "
        f"({_described(listing)}).",
        f"4. `completion/complete` with {request}: {answered}.",
        f"5. Read {page_text}: the page's text and its `tm:source` link"
        + (f", {source} (the page is embedded below)." if source else "; this page has none."),
    ]
    messages: list[Message] = []
    if source is not None:
        target = operations.read(source)
        back = [link for link in target.links if link.rel in BACK_RELS]
        history = [link.href for link in target.links if link.rel == "version-history"]
        steps.append(
            f"6. Read {source}: the file itself ({_described(target)}), with the links back to "
            "the page, up to its directory and over to the same file elsewhere: "
            + "; ".join(_link_line(link) for link in back)
            + ". "
            + (f"Its history is {history[0]}." if history else "It has no history link here.")
            + " (embedded below)"
        )
        others = [link.href for link in sources[1:]]
        if others:
            steps.append(f"The page has other `tm:source` links too: {', '.join(others)}.")
        embedded = [_resource(read), _resource(target)]
    else:
        steps.append(
            "6. Follow the page's own links instead: "
            + "; ".join(_link_line(link) for link in read.links)
        )
        embedded = [_resource(read)]
    messages.append(
        Message(
            "user",
            f"Walk the first session of the box {operations.host()}: six exchanges from a cold "
            f"connection to the source file behind the page {page}, without guessing a path. "
            "Make each request yourself (the `resolve` tool reads the same URIs and puts the "
            "links in its body), and before the next one say what the answer shows and which "
            "link leads on. When you know what you want but not where it is, the `search` tool "
            "(or any collection address with ?as=search&q=<words>) finds it by what it says; "
            "this walk shows where things are. What each step answers on this box now:\n\n"
            + "\n".join(steps),
        )
    )
    messages.extend(embedded)
    return Answer(f"The first session, from a cold connection to the source of {page}", messages)


# ---- explain-address ----------------------------------------------------------------------


def _one_step(link: Link) -> str:
    try:
        target = operations.read(link.href)
    except Refusal as refusal:
        return f"- {_link_line(link)}: refused ({refusal.reason}: {refusal.message})"
    return f"- {_link_line(link)}: {_described(target)}"


def explain_address(arguments: Mapping[str, str]) -> Answer:
    """Read the address, read what its first links point to, and ask what it is."""
    address = arguments["address"]
    content = operations.read(address)
    followed: list[Link] = []
    for link in content.links:
        if len(followed) == FOLLOW_CAP:
            break
        if link.href != content.uri and link.href not in {f.href for f in followed}:
            followed.append(link)
    lines = [_one_step(link) for link in followed]
    rest = len(content.links) - len(followed)
    text = (
        f"Say what {content.uri} is, in a few sentences for someone who has never seen this "
        "box: what kind of thing it is, what it belongs to, what it is made from or renders "
        "as, and which link a reader would follow next. It is embedded below as read. It reads "
        f"as a {_described(content)}. If it is not what was wanted, the `search` tool finds "
        "things by what they say.\n\n"
        + (
            "Its links, each read one step out:\n" + "\n".join(lines)
            if lines
            else "It has no links to follow."
        )
    )
    if rest > 0:
        more = _counted(rest, "more link is", "more links are")
        text += f"\n\n{more} in the embedded read's _meta, not followed here."
    return Answer(
        f"What {content.uri} is, from its read and its links one step out",
        [Message("user", text), _resource(content)],
    )


# ---- the table ------------------------------------------------------------------------------

PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        "first-session",
        "The first session: from a cold connection to a page's source",
        "A guided walk of six exchanges — initialize, the templates, a section of pages, a "
        "completion, the page with its tm:source link, and the source file with its history — "
        "filled with what this box answers now, the page and its source embedded.",
        (
            Argument(
                "page",
                "Page",
                "A page of the http mount, for example tm://<host>/http/<site>/docs/nes/pile. "
                "Completion lists the sites and the pages below what is typed.",
                True,
                complete_page,
            ),
            Argument(
                "template",
                "Template",
                "The resource template completed in step 4 (a uriTemplate from "
                "resources/templates/list); by default the one the page's source fits.",
                False,
                complete_template,
            ),
        ),
        first_session,
    ),
    Prompt(
        "explain-address",
        "Explain a tm:// address",
        "Reads any tm:// address, reads what its links point to one step out, and asks what "
        "the thing is and which link leads on; the read is embedded with its links.",
        (
            Argument(
                "address",
                "Address",
                "Any tm:// address of this box, for example tm://<host>/fs/docs/mcp.md. "
                "Completion walks the namespace one collection at a time.",
                True,
                complete_address,
            ),
        ),
        explain_address,
    ),
)
_BY_NAME = {prompt.name: prompt for prompt in PROMPTS}
assert len(_BY_NAME) == len(PROMPTS), "prompt names are unique"


def listed() -> list[dict[str, object]]:
    """Every prompt as ``prompts/list`` shows it, in table order."""
    return [prompt.to_json() for prompt in PROMPTS]


def prompt(name: str) -> Prompt:
    """The prompt called ``name``.

    Raises:
        BadArgument: no such prompt; ``valid`` names them all.
    """
    found = _BY_NAME.get(name)
    if found is None:
        raise BadArgument(
            None,
            f"no prompt named {name!r}; the prompts are {', '.join(_BY_NAME)}",
            valid=list(_BY_NAME),
        )
    return found


def get(name: str, arguments: Mapping[str, str]) -> Answer:
    """Render prompt ``name`` with ``arguments``.

    Raises:
        BadArgument: an unknown prompt, an argument it does not take, or a required one missing
            or empty (``valid``: every argument it takes; ``required``: the ones it needs).
        Refusal: whatever the reads it makes refuse (``bad-uri``, ``not-found`` …).
    """
    found = prompt(name)
    names = [argument.name for argument in found.arguments]
    required = [argument.name for argument in found.arguments if argument.required]
    unknown = sorted(set(arguments) - set(names))
    missing = [key for key in required if not arguments.get(key)]
    if unknown or missing:
        problems = [f"{key} is not an argument of it" for key in unknown]
        problems += [f"{key} is required" for key in missing]
        raise BadArgument(
            None,
            f"the prompt {name} cannot be rendered: {'; '.join(problems)}. "
            f"It takes {', '.join(names)}; it needs {', '.join(required) or 'none of them'}.",
            valid=names,
            required=required,
        )
    return found.build(arguments)


def complete(name: str, argument: str, value: str, context: Mapping[str, str]) -> list[str]:
    """Live values for ``argument`` of prompt ``name`` given what was typed (uncapped).

    Raises:
        BadArgument: an unknown prompt, or an argument it does not take (``valid``).
    """
    found = prompt(name)
    for candidate in found.arguments:
        if candidate.name == argument:
            return candidate.complete(value, context)
    raise BadArgument(
        None,
        f"the prompt {name} has no argument {argument!r}",
        valid=[candidate.name for candidate in found.arguments],
    )
