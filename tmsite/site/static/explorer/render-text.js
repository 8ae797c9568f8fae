// Draws text (text/*): numbered lines, with annotations (blame's commits) beside their lines.
import { el, exploreHref } from "./blocks.js";

export function render(block) {
  const first = block.firstLine || 1;
  const notes = new Map((block.annotations || []).map((a) => [a.line, a]));
  const lines = block.text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const table = el("table", { class: "code-lines", "data-media-type": block.mediaType });
  const body = el("tbody");
  lines.forEach((text, index) => {
    const note = notes.get(first + index);
    const mark = note
      ? note.href
        ? el("a", { href: exploreHref(note.href), class: "annotation", title: note.text }, note.text)
        : el("span", { class: "annotation" }, note.text)
      : "";
    body.append(
      el(
        "tr",
        {},
        notes.size ? el("td", { class: "note" }, mark) : "",
        el("td", { class: "num" }, String(first + index)),
        el("td", { class: "line" }, el("code", {}, text)),
      ),
    );
  });
  table.append(body);
  return el("div", { class: "render-text" }, table);
}
