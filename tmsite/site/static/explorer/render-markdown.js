// Draws markdown (text/markdown): headings, paragraphs, lists, quotes, fenced code, tables,
// inline code, emphasis and links. Built with DOM nodes only (never innerHTML). A relative
// link is resolved against the address the block came from and opens in the explorer.
import { el, exploreHref } from "./blocks.js";

function resolveHref(href, from) {
  if (/^tm:\/\//.test(href)) return exploreHref(href);
  if (/^(https?:|mailto:)/.test(href)) return href;
  if (href.startsWith("#")) return href;
  const base = from.split("?")[0];
  const [path, fragment] = href.split("#");
  const parts = base.replace(/^tm:\/\//, "").split("/");
  parts.pop();
  for (const segment of path.split("/")) {
    if (segment === "..") parts.length > 2 && parts.pop();
    else if (segment && segment !== ".") parts.push(segment);
  }
  return exploreHref(`tm://${parts.join("/")}`) + (fragment ? `#${fragment}` : "");
}

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/;

function inline(text, from) {
  const out = [];
  let rest = text;
  while (rest) {
    const match = INLINE.exec(rest);
    if (!match) {
      out.push(rest);
      break;
    }
    if (match.index) out.push(rest.slice(0, match.index));
    const token = match[0];
    if (match[1]) out.push(el("code", {}, token.slice(1, -1)));
    else if (match[2]) out.push(el("strong", {}, ...inline(token.slice(2, -2), from)));
    else if (match[3]) out.push(el("em", {}, ...inline(token.slice(1, -1), from)));
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token);
      const external = /^https?:/.test(href);
      out.push(
        el(
          "a",
          { href: resolveHref(href, from), ...(external ? { rel: "noopener noreferrer" } : {}) },
          ...inline(label, from),
        ),
      );
    }
    rest = rest.slice(match.index + token.length);
  }
  return out;
}

function cells(line) {
  return line.replace(/^\s*\|/, "").replace(/\|\s*$/, "").split("|").map((c) => c.trim());
}

export function render(block) {
  const from = block.from;
  const lines = block.text.split("\n");
  const doc = el("div", { class: "render-markdown" });
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].startsWith(fence[1])) body.push(lines[i++]);
      i += 1;
      doc.append(el("pre", { "data-language": fence[2] || "text" }, el("code", {}, body.join("\n"))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1].length + 1);
      doc.append(el(`h${level}`, {}, ...inline(heading[2], from)));
      i += 1;
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      const table = el("table");
      table.append(el("thead", {}, el("tr", {}, cells(line).map((c) => el("th", {}, ...inline(c, from))))));
      const body = el("tbody");
      i += 2;
      while (i < lines.length && /^\s*\|/.test(lines[i])) {
        body.append(el("tr", {}, cells(lines[i]).map((c) => el("td", {}, ...inline(c, from)))));
        i += 1;
      }
      table.append(body);
      doc.append(el("div", { class: "table-wrap" }, table));
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      const ordered = /\d/.test(item[1]);
      const list = el(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const next = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
        if (!next) {
          if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
            list.lastChild.append(" ", ...inline(lines[i].trim(), from));
            i += 1;
            continue;
          }
          break;
        }
        list.append(el("li", {}, ...inline(next[2], from)));
        i += 1;
      }
      doc.append(list);
      continue;
    }
    if (/^>\s?/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^>\s?/.test(lines[i])) quoted.push(lines[i++].replace(/^>\s?/, ""));
      doc.append(el("blockquote", {}, el("p", {}, ...inline(quoted.join(" "), from))));
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^(#{1,6}\s|```|~~~|>|\s*([-*+]|\d+[.)])\s|\s*\|)/.test(lines[i])) {
      para.push(lines[i++].trim());
    }
    if (!para.length) para.push(lines[i++].trim());
    doc.append(el("p", {}, ...inline(para.join(" "), from)));
  }
  return doc;
}
