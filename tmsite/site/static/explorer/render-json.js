// Draws JSON (application/json) as indented text; tm:// strings become links.
import { el, exploreHref } from "./blocks.js";

export function render(block) {
  let text = block.text;
  try {
    text = JSON.stringify(JSON.parse(block.text), null, 2);
  } catch {
    // not JSON after all: shown as it is
  }
  const pre = el("pre", { class: "render-json" });
  for (const part of text.split(/("tm:\/\/[^"]*")/)) {
    if (/^"tm:\/\/[^"]*"$/.test(part)) {
      pre.append(el("a", { href: exploreHref(JSON.parse(part)) }, part));
    } else {
      pre.append(part);
    }
  }
  return pre;
}
