// The plugin's client against a real `memcli serve` (started by tests/test_openclaw_plugin.py): it relays
// memcli's own hook answers, proves the server is the home's before it sends anything, and refuses squatters.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import plugin, { afterTurn, beforePrompt, promptSection } from "../../openclaw/index.js";
import { MemcliClient } from "../../openclaw/lib/client.js";
import { serverProof, verifiedMark } from "../../openclaw/lib/transport.js";
import { HOME, PORT, auth, freshHome, logText, recorder, rest, waitFor } from "./helpers.mjs";

const TMP = process.env.MEMCLI_TEST_TMP;
// a generous deadline: these check what is relayed, not how fast (bench/openclaw.py), on 2 busy cores
const client = () => new MemcliClient({ env: { ...process.env, MEMCLI_HOME: HOME, MEMCLI_HOOK_DEADLINE_MS: "10000" } });

test("the prompt hook relays exactly what memcli's UserPromptSubmit route answers", async () => {
  const prompt = "Which PostgreSQL version stores the invoices of the billing service?";
  const ours = await client().hook("UserPromptSubmit", { session_id: "js-relay-1", prompt, cwd: TMP }, 3000);
  const direct = await rest("POST", "/hooks/UserPromptSubmit", { session_id: "js-relay-2", prompt, cwd: TMP });
  assert.equal(direct.status, 200);
  assert.match(ours, /<memcli-memories/);
  assert.match(ours, /PostgreSQL 16/);
  assert.equal(ours, direct.data.hookSpecificOutput.additionalContext);
});

test("a trivial prompt injects nothing (memcli's gate, not the plugin's)", async () => {
  assert.equal(await client().hook("UserPromptSubmit", { session_id: "js-trivial", prompt: "ok thanks", cwd: TMP }, 3000), "");
});

test("the proof is memcli/proof.py's HMAC, and a proven server is remembered per process", async () => {
  // the value Python's server_proof gives for these inputs (computed by the pytest wrapper)
  assert.equal(serverProof("t0ken-abc", "ab".repeat(16), 8765), process.env.MEMCLI_TEST_PROOF);
  const sj = JSON.parse(fs.readFileSync(path.join(HOME, "server.json"), "utf8"));
  // remembered as memcli/proof.py's verified_mark (the hooks and the CLI read the same file): the value Python
  // gives for this server
  assert.equal(fs.readFileSync(path.join(HOME, "hooks-state", "verified"), "utf8"), verifiedMark(PORT, sj.pid));
  assert.equal(verifiedMark(PORT, sj.pid), process.env.MEMCLI_TEST_MARK);
});

test("before_prompt_build: digest on a session's first turn, then only what the prompt recalls", async () => {
  const ctx = { sessionId: "js-bpb", sessionKey: "agent:main:main", workspaceDir: TMP, trigger: "user" };
  const first = await beforePrompt(client(), { prompt: "How do we deploy the billing service?", messages: [] }, ctx);
  assert.match(first.prependContext, /event="SessionStart"/);
  const history = [{ role: "user", content: "How do we deploy?" }, { role: "assistant", content: [{ type: "text", text: "With the blue-green script." }] }];
  const prompt = "Which PostgreSQL version stores the billing invoices?";
  // the same session: no digest again, and nothing the digest already showed is repeated (memcli's session state)
  const later = await beforePrompt(client(), { prompt, messages: history }, ctx);
  assert.ok(!later || (!/event="SessionStart"/.test(later.prependContext) && !/PostgreSQL 16/.test(later.prependContext)));
  // a later turn of another session: only the prompt's own recall
  const other = await beforePrompt(client(), { prompt, messages: history }, { ...ctx, sessionId: "js-bpb-2" });
  assert.match(other.prependContext, /^<memcli-memories event="UserPromptSubmit"[\s\S]*PostgreSQL 16/);
  assert.equal(await beforePrompt(client(), { prompt: "ok", messages: [] }, { ...ctx, trigger: "heartbeat" }), undefined);
});

test("agent_end: the turn is captured as agent:openclaw, without the injected block and without secrets", async () => {
  const injected = "<memcli-memories event=\"UserPromptSubmit\">\n- [abcd1234] (1d ago, global) Old note about MARKER-INJECTED\n</memcli-memories>";
  const event = {
    success: true,
    messages: [
      { role: "user", content: [{ type: "text", text: `${injected}\n\nWe decided to ship every release of the mobile app on Fridays after the QA sign-off. password=hunter2hunter2` }] },
      { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "exec", arguments: {} }] },
      { role: "toolResult", content: [{ type: "text", text: "TOOL-OUTPUT-NOT-KEPT" }] },
      { role: "assistant", content: [{ type: "text", text: "Understood: the decision is recorded. Mobile releases ship on Fridays, once QA has signed off, and the release notes go out the same day." }] },
    ],
  };
  await afterTurn(client(), event, { sessionId: "js-capture", sessionKey: "agent:main:main", workspaceDir: TMP, trigger: "user" });
  const mem = await waitFor(async () => {
    const r = await rest("GET", "/api/memories?scope=agent:openclaw&tag=turn&limit=50");
    return r.data.find((m) => m.content.includes("Fridays"));
  }, 20000, "the captured turn");
  assert.equal(mem.scope, "agent:openclaw");
  assert.ok(!mem.content.includes("MARKER-INJECTED"), mem.content);
  assert.ok(!mem.content.includes("hunter2hunter2"), mem.content);
  assert.ok(!mem.content.includes("TOOL-OUTPUT-NOT-KEPT"), mem.content);
  const full = await rest("GET", `/api/memories/${mem.memory_id}`);
  assert.equal(full.data.source, "hook:stop");
});

test("a failed turn or a subagent's turn is not captured as a turn of the user", async () => {
  const messages = [{ role: "user", content: "We decided to rename the FAILEDRUN queue to orders-v2 for good." },
    { role: "assistant", content: "Renamed the FAILEDRUN queue to orders-v2; every consumer is updated and tested." }];
  await afterTurn(client(), { success: false, messages }, { sessionId: "js-failed", workspaceDir: TMP });
  const sub = messages.map((m) => ({ ...m, content: m.content.replace("FAILEDRUN", "SUBAGENTRUN") }));
  await afterTurn(client(), { success: true, messages: sub }, { sessionId: "js-sub", sessionKey: "agent:main:subagent:1", workspaceDir: TMP });
  await new Promise((r) => setTimeout(r, 3000)); // the server stores captures in the background
  const all = (await rest("GET", "/api/memories?limit=200")).data.map((m) => m.content).join("\n");
  assert.ok(!all.includes("FAILEDRUN") && !all.includes("SUBAGENTRUN"));
});

test("the system prompt section names only the tools this turn has", () => {
  assert.match(promptSection(new Set(["memcli_recall", "memcli_remember"])).join("\n"), /memcli_recall[\s\S]*memcli_remember/);
  assert.ok(!promptSection(new Set(["read"])).join("\n").includes("memcli_recall"));
});

test("register() is free of side effects and declares exactly the manifest's tools", () => {
  const tools = [];
  const hooks = [];
  const api = {
    pluginConfig: {},
    registerTool: (t) => tools.push(t.name),
    on: (name) => hooks.push(name),
    registerMemoryCapability: () => {},
    registerCli: () => {},
  };
  const before = fs.readdirSync(HOME).sort().join(",");
  plugin.register(api);
  const manifest = JSON.parse(fs.readFileSync(new URL("../../openclaw/openclaw.plugin.json", import.meta.url), "utf8"));
  assert.deepEqual(tools, manifest.contracts.tools);
  assert.deepEqual(hooks.sort(), ["agent_end", "before_prompt_build"]);
  assert.equal(manifest.kind, "memory");
  assert.equal(fs.readdirSync(HOME).sort().join(","), before);
});

// ------------------------------------------------------------------ squatters: nothing is sent to them
async function squatterHome(name, squatPort) {
  const home = freshHome(TMP, name);
  fs.copyFileSync(path.join(HOME, "auth.json"), path.join(home, "auth.json")); // the same home's token and id
  return new MemcliClient({ env: { ...process.env, MEMCLI_HOME: home, MEMCLI_PORT: String(squatPort), MEMCLI_BIN: "/nonexistent/memcli" } });
}

const EVIL = { hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: "EVIL-INSTRUCTIONS" } };

test("a squatter on MEMCLI_PORT gets neither the token nor the prompt, and nothing it says is injected", async () => {
  const sq = await recorder((r) => (r.url === "/health" ? { body: { ok: true, proof: "0".repeat(64), pid: 1 } } : { body: EVIL }));
  try {
    const c = await squatterHome("squat", sq.port);
    const out = await c.hook("UserPromptSubmit", { session_id: "sq", prompt: "SECRET-PROMPT-TEXT about billing", cwd: TMP }, 1500);
    assert.equal(out, "");
    assert.ok(sq.seen.length >= 1);
    for (const r of sq.seen) {
      assert.equal(r.headers.authorization, undefined);
      assert.ok(!r.body.includes("SECRET-PROMPT-TEXT") && !r.url.includes("SECRET"));
      assert.equal(r.url, "/health");
    }
    await assert.rejects(c.api("GET", "/api/stats", undefined, 1500), /not reachable/);
    assert.ok(sq.seen.every((r) => r.headers.authorization === undefined));
  } finally {
    sq.close();
  }
});

test("a squatter relaying the challenge to the real server is refused: the proof is bound to the port", async () => {
  const sq = await recorder(async (r) => {
    if (r.url !== "/health") return { body: EVIL };
    const res = await fetch(`http://127.0.0.1:${PORT}/health`, { headers: { "X-Memcli-Challenge": r.headers["x-memcli-challenge"] } });
    return { body: await res.json() };
  });
  try {
    const c = await squatterHome("relay", sq.port);
    const out = await c.hook("UserPromptSubmit", { session_id: "relay", prompt: "SECRET-PROMPT-TEXT again", cwd: TMP }, 1500);
    assert.equal(out, "");
    assert.ok(sq.seen.some((r) => r.url === "/health"));
    assert.ok(sq.seen.every((r) => r.url === "/health" && r.headers.authorization === undefined));
    assert.match(logText(path.join(TMP, "relay")), /did not prove it is this home's server/);
  } finally {
    sq.close();
  }
});

test("a proof remembered for an earlier process that had the pid is not trusted: the squatter is challenged", async () => {
  const sq = await recorder((r) => (r.url === "/health" ? { body: { ok: true, proof: "0".repeat(64), pid: process.pid } } : { body: EVIL }));
  try {
    // what a server killed with kill -9 leaves behind once this process (alive, not memcli) has its pid:
    // server.json, and the proof the clients remembered for it (the real server's, with this port and pid)
    const home = freshHome(TMP, "reused-pid");
    fs.copyFileSync(path.join(HOME, "auth.json"), path.join(home, "auth.json"));
    const [, , ...rest] = fs.readFileSync(path.join(HOME, "hooks-state", "verified"), "utf8").split(" ");
    fs.writeFileSync(path.join(home, "server.json"), JSON.stringify({ pid: process.pid, port: sq.port }));
    fs.mkdirSync(path.join(home, "hooks-state"), { mode: 0o700 });
    fs.writeFileSync(path.join(home, "hooks-state", "verified"), [sq.port, process.pid, ...rest].join(" "));
    const c = new MemcliClient({ env: { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: "/nonexistent/memcli" } });
    const out = await c.hook("UserPromptSubmit", { session_id: "reused", prompt: "SECRET-PROMPT-TEXT", cwd: TMP }, 1000);
    assert.equal(out, "");
    assert.ok(sq.seen.length >= 1);
    for (const r of sq.seen) {
      assert.equal(r.url, "/health");
      assert.equal(r.headers.authorization, undefined);
      assert.equal(r.headers["x-memcli-home"], undefined);
    }
    assert.match(logText(home), /did not prove it is this home's server/);
  } finally {
    sq.close();
  }
});

test("a server of another home (its own token) is refused the same way", async () => {
  const other = auth();
  const sq = await recorder((r) => ({ body: r.url === "/health" ? { ok: true, proof: serverProof("another-home-token-xyz", r.headers["x-memcli-challenge"], 0), pid: 2 } : EVIL }));
  try {
    const c = await squatterHome("other", sq.port);
    assert.equal(await c.hook("SessionStart", { session_id: "o", cwd: TMP }, 1000), "");
    assert.ok(sq.seen.every((r) => r.headers.authorization !== `Bearer ${other.token}`));
  } finally {
    sq.close();
  }
});
