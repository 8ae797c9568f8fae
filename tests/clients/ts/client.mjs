// A client of the official TypeScript SDK 1.x (@modelcontextprotocol/sdk, its Client), run by
// the tests with node from this directory's node_modules (make sdk-clients installs them).
//
// Its one argument is a JSON object, as for tests/clients/sdk1/client.py:
//   url (StreamableHTTPClientTransport) or stdio: {command, args, cwd, env}
//   (StdioClientTransport): where the server is;
//   scenario: "basics" (the handshake, tools/list, resources/read of `read`,
//   resources/templates/list, the refused read of `refused`) or "subscribe"
//   (client.subscribeResource of `uri`, then the notifications a
//   ResourceUpdatedNotificationSchema handler receives, then unsubscribeResource) or "search"
//   (tools/call of the search tool with `query`, its structuredContent checked by the SDK).
// It prints one JSON object a line on stdout; {"event": "subscribed", ...} tells the test it
// may change the subscribed file (session: whether the HTTP transport holds a session id, which
// its GET stream is opened with).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const WAIT_MS = 60_000;

function emit(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

// The transport, with every message the server sends seen on its way to the client: the
// negotiated protocol version is the initialize result's, whichever transport carried it.
function watched(transport, seen) {
  return new Proxy(transport, {
    set(target, name, value) {
      if (name === "onmessage" && typeof value === "function") {
        target.onmessage = (message, extra) => {
          seen.push(message);
          value(message, extra);
        };
      } else {
        target[name] = value;
      }
      return true;
    },
    get(target, name) {
      const value = target[name];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function connected(config) {
  const raw = config.url
    ? new StreamableHTTPClientTransport(new URL(config.url))
    : new StdioClientTransport({ ...config.stdio, stderr: "inherit" });
  const seen = [];
  const client = new Client({ name: "tmsite-tests-ts-sdk1", version: "1.0.0" });
  await client.connect(watched(raw, seen));
  const init = seen.find((message) => message.result && message.result.protocolVersion);
  const handshake = {
    protocolVersion: init.result.protocolVersion,
    serverInfo: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
  };
  return { client, handshake, transport: raw };
}

function refusal(error) {
  if (!(error instanceof McpError)) throw error;
  // McpError prefixes its message with "MCP error <code>: "; the server's is what follows.
  const message = error.message.replace(/^MCP error -?\d+: /, "");
  return { code: error.code, message, data: error.data ?? null };
}

async function basics(config) {
  const { client, handshake } = await connected(config);
  try {
    const tools = await client.listTools();
    const read = await client.readResource({ uri: config.read });
    const templates = await client.listResourceTemplates();
    let refused = null;
    try {
      await client.readResource({ uri: config.refused });
    } catch (error) {
      refused = refusal(error);
    }
    emit({
      event: "basics",
      ...handshake,
      tools: tools.tools.map((tool) => tool.name),
      read: read.contents,
      templates: templates.resourceTemplates.map((template) => template.uriTemplate),
      refused,
    });
  } finally {
    await client.close();
  }
}

async function subscribe(config) {
  const { client, handshake, transport } = await connected(config);
  try {
    let told;
    const updated = new Promise((resolve) => {
      told = resolve;
    });
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      emit({ event: "notification", method: notification.method, params: notification.params });
      told();
    });
    // Any other notification is shown too: the server must send nothing else.
    client.fallbackNotificationHandler = async (notification) => {
      emit({ event: "notification", method: notification.method, params: notification.params });
    };
    client.onerror = (error) => emit({ event: "error", error: String(error) });
    try {
      await client.subscribeResource({ uri: config.uri });
    } catch (error) {
      emit({ event: "refused", ...handshake, refused: refusal(error) });
      return;
    }
    emit({ event: "subscribed", ...handshake, session: transport.sessionId !== undefined });
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve("timeout"), WAIT_MS);
    });
    const how = await Promise.race([updated.then(() => "updated"), late]);
    clearTimeout(timer);
    if (how === "timeout") {
      emit({ event: "timeout", seconds: WAIT_MS / 1000 });
      return;
    }
    await client.unsubscribeResource({ uri: config.uri });
    emit({ event: "unsubscribed" });
  } finally {
    await client.close();
  }
}

const config = JSON.parse(process.argv[2]);
// tools/list (the SDK keeps each tool's output schema), then tools/call of search with `query`:
// the SDK itself checks structuredContent against the search tool's outputSchema.
async function search(config) {
  const { client, handshake } = await connected(config);
  try {
    await client.listTools();
    const result = await client.callTool({ name: "search", arguments: { query: config.query } });
    emit({
      event: "search",
      ...handshake,
      isError: result.isError ?? false,
      structured: result.structuredContent ?? null,
    });
  } finally {
    await client.close();
  }
}

const scenarios = { basics, subscribe, search };
await scenarios[config.scenario](config);
