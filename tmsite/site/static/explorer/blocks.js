// Draws blocks (application/vnd.tm.blocks+json): one function per kind of the closed
// vocabulary. Text is always set as text, never parsed as HTML; every address is a link that
// opens in the explorer.

/** An element with attributes and children (strings become text nodes). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === "") continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * An address as text that wraps between its parts, never inside one: a break is offered after
 * each "/" and "=" and before each "?", "&" and "#" (a <wbr>). Other text passes as it is.
 */
export function breakable(text) {
  const pieces = String(text).split(/(?<=[^/:]\/)(?!\/)|(?<==)|(?=[?&#])/);
  return pieces.flatMap((piece, index) => (index ? [document.createElement("wbr"), piece] : [piece]));
}

/** Where the explorer draws an address. */
export function exploreHref(uri) {
  return `/explore?uri=${encodeURIComponent(uri)}`;
}

const SVG = "http://www.w3.org/2000/svg";
const SHAPES = {
  circle: '<circle cx="8" cy="8" r="6"/>',
  square: '<rect x="2" y="2" width="12" height="12"/>',
  diamond: '<path d="M8 1 15 8 8 15 1 8z"/>',
  triangle: '<path d="M8 2 15 14H1z"/>',
  hexagon: '<path d="M4 2h8l4 6-4 6H4L0 8z"/>',
  star: '<path d="M8 1l2 5h5l-4 3 2 6-5-4-5 4 2-6-4-3h5z"/>',
  document: '<path d="M3 1h7l3 3v11H3z"/>',
  cylinder: '<ellipse cx="8" cy="4" rx="6" ry="2.5"/><path d="M2 4v8c0 1.4 2.7 2.5 6 2.5s6-1.1 6-2.5V4"/>',
  globe: '<circle cx="8" cy="8" r="6.5"/><path d="M1.5 8h13M8 1.5c-3 3.5-3 9.5 0 13M8 1.5c3 3.5 3 9.5 0 13"/>',
  cloud: '<path d="M4 13h8a3 3 0 0 0 0-6 4 4 0 0 0-7.6-1A3.5 3.5 0 0 0 4 13z"/>',
};

/** A small icon for a mount's shape (decorative: the text says the same). */
export function shapeIcon(shape) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("class", `shape shape-${shape}`);
  svg.setAttribute("aria-hidden", "true");
  svg.innerHTML = SHAPES[shape] || SHAPES.circle; // fixed markup from this module, never data
  return svg;
}

function linkTo(href, text) {
  return el("a", { href: exploreHref(href), title: href }, text);
}

function cell(value) {
  if (value && typeof value === "object" && value.href) return linkTo(value.href, value.text);
  if (value === null || value === undefined) return "";
  return String(value);
}

const DRAW = {
  heading(block) {
    const level = Math.min(3, Math.max(1, block.level || 1)) + 1; // the page's h1 is the address
    return el(`h${level}`, { class: "block-heading" }, block.text);
  },
  note(block) {
    return el("p", { class: `block-note tone-${block.tone || "info"}` }, block.text);
  },
  kv(block) {
    const list = el("dl", { class: "block-kv" });
    for (const item of block.items) {
      list.append(el("dt", {}, item.key));
      list.append(el("dd", {}, item.href ? linkTo(item.href, String(item.value)) : cell(item.value)));
    }
    return list;
  },
  list(block) {
    const list = el(block.ordered ? "ol" : "ul", { class: "block-list" });
    for (const item of block.items) {
      list.append(el("li", {}, item.href ? linkTo(item.href, item.text) : item.text));
    }
    return list;
  },
  table(block) {
    const wrap = el("div", { class: "block-table" });
    const table = el("table");
    table.append(el("thead", {}, el("tr", {}, block.columns.map((c) => el("th", { scope: "col" }, c)))));
    const body = el("tbody");
    for (const row of block.rows) body.append(el("tr", {}, row.map((v) => el("td", {}, cell(v)))));
    table.append(body);
    wrap.append(table);
    if (block.total !== undefined) wrap.append(el("p", { class: "total" }, `${block.total} in all`));
    if (block.next) {
      wrap.append(
        el("p", { class: "pager" }, el("a", { href: exploreHref(block.next), class: "next-page", rel: "next" }, "Next page →")),
      );
    }
    return wrap;
  },
  timeline(block) {
    const list = el("ol", { class: "block-timeline" });
    for (const event of block.events) {
      list.append(
        el(
          "li",
          {},
          el("time", { datetime: event.when }, event.when),
          " ",
          event.href ? linkTo(event.href, event.title) : el("span", {}, event.title),
          event.who ? el("span", { class: "who" }, ` — ${event.who}`) : "",
          event.detail ? el("code", { class: "detail" }, event.detail) : "",
        ),
      );
    }
    return list;
  },
  diff(block) {
    const pre = el("pre", { class: "block-diff" });
    for (const line of block.lines) {
      const op = line.op === "@" ? "@@" : line.op;
      pre.append(el("span", { class: `op op-${line.op === " " ? "same" : line.op === "+" ? "add" : line.op === "-" ? "del" : "hunk"}` }, `${op}${line.text}\n`));
    }
    return el("figure", { class: "diff" }, el("figcaption", {}, "Changed since: ", linkTo(block.new, "now")), pre);
  },
  async code(block, ctx) {
    const renderer = await ctx.renderer(block.mediaType).catch(() => null);
    if (renderer && renderer.render) return renderer.render(block, ctx);
    const fallback = await ctx.renderer("text/plain").catch(() => null);
    if (fallback && fallback.render) return fallback.render(block, ctx);
    return el("pre", { class: "block-code" }, block.text);
  },
  async media(block, ctx) {
    const renderer = await ctx.renderer(block.mediaType).catch(() => null);
    if (renderer && renderer.render) return renderer.render(block, ctx);
    return el("p", { class: "block-media" }, linkTo(block.href, `${block.mediaType} (${block.size ?? "?"} bytes)`));
  },
  question(block) {
    const box = el("div", { class: "block-question" }, el("p", {}, block.prompt));
    const list = el("ul", { class: "suggestions" });
    for (const option of block.options) list.append(el("li", {}, linkTo(option.href, option.label)));
    box.append(list);
    return box;
  },
  finding(block) {
    return el(
      "div",
      { class: "block-finding", "data-reason": block.reason },
      el("strong", {}, block.reason),
      ": ",
      block.message,
    );
  },
  trail(block) {
    const list = el("ol", { class: "block-trail" });
    for (const step of block.steps) {
      list.append(el("li", { value: step.n }, linkTo(step.href, step.href), step.note ? el("span", { class: "step-note" }, ` — ${step.note}`) : ""));
    }
    return el("nav", { class: "trail", "aria-label": block.title }, list);
  },
  link(block) {
    return el("p", { class: "block-link" }, el("span", { class: "rel" }, block.rel), " ", linkTo(block.href, block.title || block.href));
  },
};

/** DOM nodes for blocks, in order; each knows its kind and the address it came from. */
export async function drawBlocks(blocks, ctx) {
  const out = [];
  for (const block of blocks) {
    const draw = DRAW[block.kind];
    const node = draw ? await draw(block, ctx) : el("pre", {}, JSON.stringify(block, null, 1));
    const wrap = el("div", { class: `block block-${block.kind}`, "data-kind": block.kind, "data-from": block.from });
    wrap.append(node);
    out.push(wrap);
  }
  return out;
}

/** As the renderer for application/vnd.tm.blocks+json: a whole blocks body. */
export async function render(body, ctx) {
  const wrap = el("div", { class: "blocks" });
  wrap.append(...(await drawBlocks(body.blocks || [], ctx)));
  return wrap;
}
