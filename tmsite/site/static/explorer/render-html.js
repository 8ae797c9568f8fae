// Draws HTML (text/html) in a sandboxed frame: no scripts, no same-origin access.
import { el } from "./blocks.js";

export function render(block) {
  const frame = el("iframe", { class: "render-html", sandbox: "", title: "The page as a visitor gets it" });
  frame.srcdoc = block.text;
  return frame;
}
