// Draws an image (image/*): its bytes are read from the media block's ?as=raw address.
import { el, exploreHref } from "./blocks.js";

export async function render(block, ctx) {
  const figure = el("figure", { class: "render-image" });
  try {
    const read = await ctx.resolve(block.href);
    if (!read.blob) throw new Error("no bytes");
    figure.append(el("img", { src: `data:${block.mediaType};base64,${read.blob}`, alt: block.title || block.href }));
  } catch {
    figure.append(el("p", {}, "The image could not be read."));
  }
  figure.append(el("figcaption", {}, el("a", { href: exploreHref(block.href) }, block.title || block.href)));
  return figure;
}
