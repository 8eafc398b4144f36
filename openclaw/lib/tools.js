// The agent tools: memcli's MCP tools (src/memcli/mcp/server.py) under OpenClaw names, with the same
// arguments, the same JSON results (the CLI's shapes) and the same errors (memcli's message), carried over
// memcli's REST API. Bad arguments are refused here with a clear message before anything is sent.

import { MemcliError } from "./client.js";

const TOOL_BUDGET_MS = 15000; // a tool may wait for a cold server (store + model loading) more than a hook

const MEMORY_ID = {
  type: "string",
  description: "A memory id: the full id, its short form (last 8 hex digits) or a unique prefix (at least 4 characters).",
};
const NAMESPACE = { type: "string", description: "Namespace (isolated memory pool). Default: the configured one." };
const ID_NAMESPACE = { type: "string", description: "The namespace the memory is in (a memory of another namespace is not found). Default: the configured one." };
const TAGS = { type: "array", items: { type: "string" }, description: 'Free labels, e.g. ["decision", "bug"].' };

/** One memory's route, in the namespace named (else the server's: an id is looked up in one namespace only). */
function memoryPath({ memory_id, namespace }) {
  const path = `/api/memories/${encodeURIComponent(memory_id)}`;
  return namespace != null ? `${path}?${new URLSearchParams({ namespace })}` : path;
}

function schema(properties, required = []) {
  return { type: "object", properties, required, additionalProperties: false };
}

export const TOOLS = {
  memcli_recall: {
    label: "Recall memories",
    description:
      "Find the memories most relevant to a query (hybrid: meaning + keywords), best first, from memcli: the " +
      "memory shared by all of the user's AI agents. Call it before answering anything that may have been " +
      "decided, solved or explained before, in this or another agent's session. Returns a list of " +
      '{"memory_id", "content", "score" (0..1), "tags", "scope", "namespace", "importance", "key", "created_at", "updated_at", ...}.',
    parameters: schema({
      query: { type: "string", description: "What you are looking for, in natural language or keywords (identifiers, paths, error codes work too)." },
      top_k: { type: "integer", minimum: 1, maximum: 100, description: "How many memories to return (default 5)." },
      agent_filter: { type: "string", description: "Only memories of this agent (scope agent:<name>); 'global' for shared ones only." },
      tags: { ...TAGS, description: "Only memories that have all of these tags." },
      namespace: NAMESPACE,
      include_archived: { type: "boolean", description: "Also memories that memcli distill merged into another (superseded) or archived (expired)." },
    }, ["query"]),
    call: (p) => {
      const q = new URLSearchParams({ q: p.query, top_k: String(p.top_k ?? 5) });
      if (p.agent_filter != null) q.set("scope", p.agent_filter);
      for (const t of p.tags ?? []) q.append("tag", t);
      if (p.namespace != null) q.set("namespace", p.namespace);
      if (p.include_archived) q.set("include_archived", "true");
      return ["GET", `/api/search?${q}`];
    },
  },
  memcli_remember: {
    label: "Remember a fact",
    description:
      "Store a memory that every agent of this user can recall later (by meaning or keyword, any language). Use it " +
      "for durable knowledge: decisions and their reasons, fixes, conventions, preferences, facts about the project " +
      "or the user. Exact repeats are not stored twice (the existing id is returned); similar memories are listed in " +
      '`duplicate_of`. Returns {"ok", "memory_id", "duplicate_of", "created", "updated"}.',
    parameters: schema({
      content: { type: "string", description: "The fact, decision or lesson to store, as one self-contained statement (1..32,000 characters)." },
      tags: TAGS,
      agent: { type: "string", description: "Store it as this agent's own memory (scope agent:<name>) instead of the shared global scope." },
      importance: { type: "number", minimum: 0, maximum: 1, description: "0.0 .. 1.0; default 0.5." },
      key: { type: "string", description: "Optional upsert handle: remembering again with the same key updates that memory instead of adding one." },
      ttl: { type: "string", description: "Expire after a duration, like 30m, 12h, 7d, 2w." },
      metadata: { type: "object", description: "Application-defined JSON object." },
      namespace: NAMESPACE,
    }, ["content"]),
    call: (p) => ["POST", "/api/memories", { importance: 0.5, ...p }],
  },
  memcli_get: {
    label: "Get a memory",
    description: "One memory by id (or unique id prefix), with all its fields, including `version`.",
    parameters: schema({ memory_id: MEMORY_ID, namespace: ID_NAMESPACE }, ["memory_id"]),
    call: (p) => ["GET", memoryPath(p)],
  },
  memcli_update: {
    label: "Update a memory",
    description: 'Correct or refine an existing memory; only the fields given change. Returns {"ok", "memory_id", "version"}.',
    parameters: schema({
      memory_id: MEMORY_ID,
      content: { type: "string", description: "New text (replaces the old text)." },
      tags: { ...TAGS, description: "New tags (replace the old ones)." },
      importance: { type: "number", minimum: 0, maximum: 1, description: "New importance, 0.0 .. 1.0." },
      scope: { type: "string", description: "New scope: 'global' or 'agent:<name>'." },
      expected_version: { type: "integer", description: "Only update if the memory is still at this version (from `get`); else an error." },
      namespace: ID_NAMESPACE,
    }, ["memory_id"]),
    call: ({ memory_id, namespace, ...change }) => ["PATCH", memoryPath({ memory_id, namespace }), change],
    result: (item) => ({ ok: true, memory_id: item.memory_id, version: item.version }),
  },
  memcli_forget: {
    label: "Forget a memory",
    description: 'Delete a memory for good (every agent loses it). Use for wrong or obsolete memories. Returns {"ok"}.',
    parameters: schema({ memory_id: MEMORY_ID, namespace: ID_NAMESPACE }, ["memory_id"]),
    call: (p) => ["DELETE", memoryPath(p)],
  },
};

export const TOOL_NAMES = Object.keys(TOOLS);

function typeOk(value, spec) {
  switch (spec.type) {
    case "string": return typeof value === "string";
    case "integer": return Number.isInteger(value);
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "boolean": return typeof value === "boolean";
    case "array": return Array.isArray(value) && value.every((v) => typeOk(v, spec.items));
    case "object": return value !== null && typeof value === "object" && !Array.isArray(value);
    default: return true;
  }
}

/** The arguments, checked against the tool's schema: unknown, missing or mistyped ones are an error. */
export function checkArgs(name, params) {
  const { properties, required } = TOOLS[name].parameters;
  const args = params ?? {};
  if (typeof args !== "object" || Array.isArray(args)) throw new MemcliError(`${name}: the arguments must be a JSON object`, 422);
  const unknown = Object.keys(args).filter((k) => !(k in properties));
  if (unknown.length) {
    throw new MemcliError(`${name}: unknown argument(s): ${unknown.join(", ")}; allowed: ${Object.keys(properties).join(", ")}`, 422);
  }
  for (const key of required) {
    if (args[key] === undefined || args[key] === null) throw new MemcliError(`${name}: missing required argument: ${key}`, 422);
  }
  const out = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === null) continue; // null is "not given", as in the MCP tools
    const spec = properties[key];
    const kind = spec.type === "array" ? `a list of ${spec.items.type}s` : `${/^[aeiou]/.test(spec.type) ? "an" : "a"} ${spec.type}`;
    if (!typeOk(value, spec)) throw new MemcliError(`${name}: ${key} must be ${kind}`, 422);
    if ((spec.minimum !== undefined && value < spec.minimum) || (spec.maximum !== undefined && value > spec.maximum)) {
      throw new MemcliError(`${name}: ${key} must be between ${spec.minimum} and ${spec.maximum}`, 422);
    }
    out[key] = value;
  }
  return out;
}

/** Run one tool: the JSON result as text (what the model reads) and as details. Errors throw (OpenClaw
 * reports the message to the model as the tool's error). */
export async function runTool(client, name, params) {
  const tool = TOOLS[name];
  const [method, urlPath, body] = tool.call(checkArgs(name, params));
  const data = await client.api(method, urlPath, body, TOOL_BUDGET_MS);
  const result = tool.result ? tool.result(data) : data;
  return { content: [{ type: "text", text: JSON.stringify(result) }], details: result };
}
