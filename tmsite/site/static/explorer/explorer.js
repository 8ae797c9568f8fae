// The explorer: reads one tm:// address as blocks through the REST route and draws it from the
// blocks, the manifest (shapes, colours, handles) and the renderers (one module per media type),
// nothing else. Every control is a link or a button: Tab moves, Enter follows. Once drawn, the
// address is listened to (live.js) where the server delivers streams.

import { breakable, drawBlocks, el, exploreHref, shapeIcon } from "./blocks.js";
import { goLive } from "./live.js";

const root = document.getElementById("explorer");
const api = root.dataset.api;
const start = root.dataset.start;

/** The blocks read of an address: its own facet moves to of=. */
export function blocksUri(uri) {
  const [base, query = ""] = splitQuery(uri);
  const params = query ? query.split("&").filter(Boolean) : [];
  const kept = [];
  let facet = null;
  for (const pair of params) {
    const [key, value = ""] = pair.split("=");
    if (key === "as") facet = value;
    else if (key !== "of") kept.push(pair);
  }
  if (facet === "blocks") return uri;
  const head = ["as=blocks", ...(facet ? [`of=${facet}`] : [])];
  return `${base}?${[...head, ...kept].join("&")}`;
}

function splitQuery(uri) {
  const at = uri.indexOf("?");
  return at < 0 ? [uri, ""] : [uri.slice(0, at), uri.slice(at + 1)];
}

/** The same address with ?as= set to facet (null: the thing's default). */
export function withFacet(uri, facet) {
  const [base, query] = splitQuery(uri);
  const kept = (query ? query.split("&") : []).filter(
    (pair) => pair && !/^(as|of|cursor|lines|range|pointer)=/.test(pair),
  );
  if (facet) kept.unshift(`as=${facet}`);
  return kept.length ? `${base}?${kept.join("&")}` : base;
}

function facetOf(uri) {
  const [, query] = splitQuery(uri);
  for (const pair of query ? query.split("&") : []) {
    const [key, value] = pair.split("=");
    if (key === "as") return value;
  }
  return null;
}

async function resolve(uri) {
  const response = await fetch(`${api}?uri=${encodeURIComponent(uri)}`, {
    headers: { Accept: "application/json" },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error || `the read failed (HTTP ${response.status})`);
    error.reason = body.reason || `http-${response.status}`;
    error.fields = body;
    throw error;
  }
  return body;
}

async function loadManifest() {
  try {
    const read = await resolve(root.dataset.manifest);
    return JSON.parse(read.text);
  } catch {
    return { mounts: {}, relations: {}, confidences: {}, kinds: {}, renderers: [] };
  }
}

// ---- renderers: by media type, imported only when the served file has the published hash ----

const modules = new Map();

async function sha256(text) {
  if (!globalThis.crypto?.subtle) return null;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function rendererFor(manifest, mediaType) {
  const table = new Map((manifest.renderers || []).map((r) => [r.mediaType, r]));
  const base = (mediaType || "").split(";")[0].trim().toLowerCase();
  return table.get(base) || table.get(`${base.split("/")[0]}/*`) || null;
}

async function loadRenderer(entry) {
  if (!modules.has(entry.module)) {
    modules.set(
      entry.module,
      (async () => {
        const source = await (await fetch(entry.module)).text();
        const hash = await sha256(source);
        if (hash !== null && hash !== entry.sha256) {
          throw new Error(`${entry.module} does not match its published sha256`);
        }
        return import(entry.module);
      })(),
    );
  }
  return modules.get(entry.module);
}

// ---- drawing ------------------------------------------------------------------------------

function status(text) {
  document.getElementById("status").textContent = text;
}

function drawAlert(title, message, options) {
  const region = document.getElementById("alert-region");
  region.replaceChildren();
  const box = el("div", { class: "refusal", role: "alert" });
  box.append(el("h2", {}, title), el("p", {}, message));
  if (options && options.length) {
    box.append(el("p", { class: "suggest-label" }, "Nearest addresses that resolve:"));
    const list = el("ul", { class: "suggestions" });
    for (const option of options) {
      list.append(
        el("li", {}, el("a", { href: exploreHref(option.href), class: "suggestion" }, option.label)),
      );
    }
    box.append(list);
  }
  region.append(box);
}

function drawFacets(body, current, uri) {
  const nav = document.getElementById("facets");
  nav.replaceChildren();
  if (body.refused) return;
  nav.append(el("span", { class: "facets-label" }, "Facets"));
  const list = el("ul", { role: "list" });
  const choices = [null, ...body.facets.filter((f) => f !== "blocks")];
  for (const facet of choices) {
    const on = (facet || null) === (current || null);
    const link = el(
      "a",
      {
        href: exploreHref(withFacet(uri, facet)),
        class: `facet${on ? " on" : ""}`,
        "data-facet": facet || "default",
        ...(on ? { "aria-current": "true" } : {}),
      },
      facet || "default",
    );
    list.append(el("li", {}, link));
  }
  nav.append(list);
}

function mountOf(href) {
  const match = /^tm:\/\/[^/?]*\/([^/?]+)/.exec(href);
  return match ? decodeURIComponent(match[1]) : null;
}

function drawEdges(manifest, links) {
  const aside = document.getElementById("edges");
  aside.replaceChildren(el("h2", {}, `Links (${links.length})`));
  const list = el("ul", { class: "edge-list" });
  for (const link of links) {
    const relation = (manifest.relations || {})[link.rel] || {};
    const colour = relation.colour || {};
    const style = (manifest.confidences || {})[link.confidence] || "solid";
    const mount = mountOf(link.href);
    const shape = ((manifest.mounts || {})[mount] || {}).shape || "circle";
    const anchor = el(
      "a",
      {
        href: exploreHref(link.href),
        class: "edge",
        "data-rel": link.rel,
        "data-family": relation.family || "other",
        style: `--edge-light:${colour.light || "#5c6166"};--edge-dark:${colour.dark || "#a0a6ad"};--edge-style:${style}`,
        title: link.href,
      },
      shapeIcon(shape),
      el("span", { class: "rel" }, link.rel),
      el("span", { class: "target" }, breakable(link.title || link.href)),
      link.confidence ? el("span", { class: "confidence" }, link.confidence) : "",
      link.count ? el("span", { class: "count" }, `×${link.count}`) : "",
    );
    list.append(el("li", {}, anchor));
  }
  aside.append(list);
}

async function main() {
  const manifest = await loadManifest();
  const target = start;
  document.getElementById("address").value = target;
  document.getElementById("title").replaceChildren(...breakable(target));
  let read;
  try {
    read = await resolve(blocksUri(target));
  } catch (error) {
    status(`Refused: ${error.reason}`);
    drawAlert(`Refused: ${error.reason}`, error.message, []);
    root.dataset.ready = "true";
    return;
  }
  const body = JSON.parse(read.text);
  const hidden = body.refused ? ["link", "finding", "question", "heading"] : ["link"];
  const blocks = body.blocks.filter((b) => !hidden.includes(b.kind));
  const links = body.blocks.filter((b) => b.kind === "link");
  const ctx = {
    manifest,
    renderer: async (mediaType) => {
      const entry = rendererFor(manifest, mediaType);
      return entry ? loadRenderer(entry) : null;
    },
    resolve,
  };
  if (body.refused) {
    const finding = body.blocks.find((b) => b.kind === "finding");
    const question = body.blocks.find((b) => b.kind === "question");
    drawAlert(
      `Refused: ${finding ? finding.reason : "refused"}`,
      finding ? finding.message : "this address does not resolve",
      question ? question.options : [],
    );
    status(`Refused: ${target}`);
  } else {
    document.getElementById("alert-region").replaceChildren();
    const count = body.reads.length;
    status(`${body.kind} · ${body.mimeType || ""} · ${count} ${count === 1 ? "address" : "addresses"} read`);
  }
  drawFacets(body, facetOf(target), target);
  const section = document.getElementById("blocks");
  section.replaceChildren(...(await drawBlocks(blocks, ctx)));
  drawEdges(manifest, links);
  document.title = `Explorer · ${target}`;
  root.dataset.ready = "true";
  if (!body.refused && root.dataset.mcp) {
    goLive({
      endpoint: root.dataset.mcp,
      uri: target,
      region: document.getElementById("live"),
      root,
      drawn: read.text,
      reread: async () => (await resolve(blocksUri(target))).text,
    });
  }
}

main().catch((error) => {
  status("The explorer failed");
  drawAlert("The explorer failed", String(error && error.message ? error.message : error), []);
  root.dataset.ready = "true";
});
