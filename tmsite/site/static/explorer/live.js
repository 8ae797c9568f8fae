// The explorer, live: the address drawn is subscribed to with a 2026-07-28
// `subscriptions/listen` POSTed to the MCP endpoint, its event stream read from the fetch
// body (an EventSource cannot POST). A change is told in a notice with a "Reload" button;
// nothing is re-drawn behind the reader's back. Where the server holds no streams
// (`server/discover` does not advertise `resources.subscribe`) nothing is asked and nothing
// is shown. A stream that ends (`resultType: complete`) or breaks is listened to again:
// within a second after a stream that lasted, else after a wait that doubles, up to a
// minute; after eight listens in a row are refused or broken it stops. It stops when the page
// is left. Nothing is replayed across streams: on each acknowledgement the address is read again and compared
// with what was drawn, so a change while no stream was open is told too.

import { breakable, el, exploreHref } from "./blocks.js";

const VERSION = "2026-07-28";
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
const META = {
  "io.modelcontextprotocol/protocolVersion": VERSION,
  "io.modelcontextprotocol/clientInfo": { name: "tinymachines-explorer", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};
/** The first wait before listening again after a break, and the longest (milliseconds). */
const FIRST_WAIT = 1000;
const LONGEST_WAIT = 60000;
/** Breaks in a row (no acknowledgement between them) after which the page stops trying. */
const MOST_BREAKS = 8;
/** A stream open this long (milliseconds) was a good one: the next wait starts small again. */
const SETTLED = 10000;
/** The wait before listening again after a good stream's graceful end. */
const AFTER_COMPLETE = 250;
/** Changed children named in a collection's notice; the rest are counted. */
const MOST_NAMED = 10;

function headers(method) {
  return {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": VERSION,
    "Mcp-Method": method,
  };
}

function request(id, method, params = {}) {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } });
}

/** Whether the server answering here delivers resource subscriptions. */
async function delivered(endpoint, signal) {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: headers("server/discover"),
    body: request("explorer-discover", "server/discover"),
    signal,
  });
  if (!response.ok) return false;
  const body = await response.json().catch(() => ({}));
  return body?.result?.capabilities?.resources?.subscribe === true;
}

/** The messages of an event stream, one JSON-RPC message at a time (comments skipped). */
async function* messages(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end = buffer.indexOf("\n");
      while (end >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        end = buffer.indexOf("\n");
        if (line === "") {
          if (data.length) yield JSON.parse(data.join("\n"));
          data = [];
        } else if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        }
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** The notice of what changed, drawn into `region` (a polite live region). */
class Notice {
  constructor(region, uri) {
    this.region = region;
    this.uri = uri;
    this.self = false;
    this.children = [];
  }

  told(changed) {
    if (changed === this.uri) this.self = true;
    else if (!this.children.includes(changed)) this.children.unshift(changed);
    this.draw();
  }

  draw() {
    const box = el("div", { class: "live-notice", id: "live-notice" });
    if (this.self) {
      box.append(el("p", {}, el("strong", {}, "This address changed"), " since it was drawn."));
    }
    if (this.children.length) {
      const count = this.children.length;
      box.append(
        el(
          "p",
          {},
          el("strong", {}, count === 1 ? "Changed beneath this address:" : `${count} changed beneath this address:`),
        ),
      );
      const list = el("ul", { class: "live-changed" });
      for (const child of this.children.slice(0, MOST_NAMED)) {
        list.append(el("li", {}, el("a", { href: exploreHref(child), class: "live-child" }, breakable(child))));
      }
      if (count > MOST_NAMED) list.append(el("li", {}, `and ${count - MOST_NAMED} more`));
      box.append(list);
    }
    const reload = el("button", { type: "button", class: "live-reload" }, "Reload");
    reload.addEventListener("click", () => window.location.reload());
    box.append(el("p", {}, reload, " to draw it as it is now."));
    this.region.replaceChildren(box);
  }
}

/**
 * Listen to `uri` on `endpoint` while the page is shown; tell changes in `region`.
 * `root.dataset.live` says where it stands: `asking`, `listening`, `waiting` (to listen again),
 * `off` (not delivered here, or the address not honoured), `stopped` (too many breaks) or
 * `left` (the page was hidden: listened to again if it is shown from the back-forward cache).
 * `drawn` is the read the page drew; `reread()` reads it again (compared on each ack).
 */
export function goLive({ endpoint, uri, region, root, drawn, reread }) {
  const notice = new Notice(region, uri);
  let controller = null;
  let timer = null;
  let serial = 0;

  const state = (name) => {
    root.dataset.live = name;
  };

  async function listenOnce(signal) {
    serial += 1;
    const id = `explorer-live-${serial}`;
    const response = await fetch(endpoint, {
      method: "POST",
      headers: headers("subscriptions/listen"),
      body: request(id, "subscriptions/listen", {
        notifications: { resourceSubscriptions: [uri] },
      }),
      signal,
      cache: "no-store",
    });
    const type = response.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      // refused as a whole (a cap, the rate limit, not served): a JSON answer, not a stream
      const body = await response.json().catch(() => ({}));
      const retry = Number(body?.error?.data?.retryAfter);
      if (response.status === 404 || body?.error?.code === -32601) return { end: "off" };
      return { end: "broken", wait: Number.isFinite(retry) && retry > 0 ? retry * 1000 : null };
    }
    let acknowledged = false;
    for await (const message of messages(response)) {
      if (message.method === "notifications/subscriptions/acknowledged") {
        const honoured = message.params?.notifications?.resourceSubscriptions || [];
        if (!honoured.includes(uri)) return { end: "off" };
        acknowledged = true;
        state("listening");
        reread()
          .then((now) => {
            if (now !== drawn) notice.told(uri);
          })
          .catch(() => {}); // a read refused now is not this page's to report
      } else if (message.params?._meta?.[SUBSCRIPTION_ID] !== id && message.id !== id) {
        continue; // not this stream's
      } else if (message.method === "notifications/resources/updated" && message.params.uri) {
        notice.told(message.params.uri);
        root.dataset.changes = String(Number(root.dataset.changes || 0) + 1);
      } else if (message.id === id) {
        return { end: message.result?.resultType === "complete" ? "complete" : "broken", acknowledged };
      }
    }
    return { end: "broken", acknowledged };
  }

  async function run() {
    controller = new AbortController();
    const { signal } = controller;
    let breaks = 0; // listens in a row that were never acknowledged: too many, and it stops
    let short = 0; // streams in a row that did not settle: each waits twice as long
    state("asking");
    try {
      if (!(await delivered(endpoint, signal))) {
        state("off");
        return;
      }
    } catch {
      if (!signal.aborted) state("off");
      return;
    }
    while (!signal.aborted) {
      const began = performance.now();
      let outcome;
      try {
        outcome = await listenOnce(signal);
      } catch {
        if (signal.aborted) return;
        outcome = { end: "broken" };
      }
      if (outcome.end === "off") {
        state("off");
        return;
      }
      breaks = outcome.acknowledged ? 0 : breaks + 1;
      if (breaks >= MOST_BREAKS) {
        state("stopped");
        return;
      }
      short = performance.now() - began >= SETTLED ? 0 : short + 1;
      const grown = short
        ? Math.min(LONGEST_WAIT, FIRST_WAIT * 2 ** (short - 1))
        : outcome.end === "complete"
          ? AFTER_COMPLETE
          : FIRST_WAIT;
      const wait = Math.min(LONGEST_WAIT, outcome.wait || grown) * (0.9 + Math.random() / 5);
      state("waiting");
      await new Promise((resolve) => {
        timer = setTimeout(resolve, wait);
        signal.addEventListener("abort", resolve, { once: true });
      });
    }
  }

  function stop() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (controller) controller.abort();
    controller = null;
    state("left");
  }

  window.addEventListener("pagehide", stop);
  window.addEventListener("pageshow", (event) => {
    if (event.persisted && controller === null) run();
  });
  run();
  return stop;
}
