// memcli down, slow or missing never breaks a turn: the hooks answer nothing within their deadline, the
// failure is logged, a finished turn is queued for the server; with memcli installed, the plugin starts the
// home's server itself (as the Claude Code hooks do) and uses it once it proves it is the home's.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { afterTurn, beforePrompt } from "../../openclaw/index.js";
import { MemcliClient } from "../../openclaw/lib/client.js";
import { serverProof } from "../../openclaw/lib/transport.js";
import { freshHome, logText, recorder, waitFor } from "./helpers.mjs";

const TMP = process.env.MEMCLI_TEST_TMP;
const TURN = {
  success: true,
  messages: [
    { role: "user", content: "We agreed that the nightly export job moves from 02:00 to 04:30 UTC to avoid the backup window." },
    { role: "assistant", content: [{ type: "text", text: "Done: the nightly export job now starts at 04:30 UTC, after the backup window closes; the cron entry and the runbook are updated." }] },
  ],
};

test("no memcli to start: the prompt gets nothing within the deadline, the turn is queued, the failure logged", async () => {
  const home = freshHome(TMP, "no-memcli");
  const client = new MemcliClient({ env: { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: "/nonexistent/memcli", MEMCLI_HOOK_DEADLINE_MS: "800" } });
  let t = Date.now();
  const out = await beforePrompt(client, { prompt: "What did we decide about the nightly export?", messages: [{ role: "assistant", content: "x" }] }, { sessionId: "f1", workspaceDir: TMP });
  assert.equal(out, undefined);
  assert.ok(Date.now() - t < 2500, `took ${Date.now() - t} ms`);
  t = Date.now();
  await afterTurn(client, TURN, { sessionId: "f1", workspaceDir: TMP });
  assert.ok(Date.now() - t < 2500, `took ${Date.now() - t} ms`);
  const queued = fs.readdirSync(path.join(home, "spool")).filter((n) => n.endsWith(".json"));
  assert.equal(queued.length, 1);
  const payload = JSON.parse(fs.readFileSync(path.join(home, "spool", queued[0]), "utf8"));
  assert.equal(payload.agent, "openclaw");
  assert.match(payload.last_assistant_message, /04:30 UTC/);
  await waitFor(() => /could not start the memcli server/.test(logText(home)), 5000, "the log line");
});

test("a server that proves itself but hangs: the prompt hook gives up at its deadline", async () => {
  const home = freshHome(TMP, "hang");
  const token = randomBytes(24).toString("hex");
  fs.writeFileSync(path.join(home, "auth.json"), JSON.stringify({ home_id: randomBytes(8).toString("hex"), token }));
  const slow = await recorder((r) => (r.url === "/health"
    ? { body: { ok: true, proof: serverProof(token, r.headers["x-memcli-challenge"], slowPort()), pid: process.pid } }
    : "hang"));
  function slowPort() { return slow.port; }
  try {
    fs.writeFileSync(path.join(home, "server.json"), JSON.stringify({ port: slow.port, pid: process.pid }));
    const client = new MemcliClient({ env: { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: "/nonexistent/memcli" }, pluginConfig: { deadlineMs: 400 } });
    const t = Date.now();
    const out = await beforePrompt(client, { prompt: "Anything about the export job?", messages: [{ role: "assistant", content: "x" }] }, { sessionId: "h1", workspaceDir: TMP });
    assert.equal(out, undefined);
    assert.ok(Date.now() - t < 1500, `took ${Date.now() - t} ms`);
    assert.ok(slow.seen.some((r) => r.url === "/hooks/UserPromptSubmit" && r.headers.authorization === `Bearer ${token}`));
    assert.match(logText(home), /UserPromptSubmit: no answer within 400 ms/);
  } finally {
    slow.close();
  }
});

test("no server running: the plugin starts the home's own and uses it once it proves itself", async () => {
  const home = freshHome(TMP, "cold");
  const env = { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: process.env.MEMCLI_TEST_BIN, MEMCLI_PORT: process.env.MEMCLI_TEST_FREE_PORT };
  const client = new MemcliClient({ env });
  await beforePrompt(client, { prompt: "first prompt of a session", messages: [] }, { sessionId: "c1", workspaceDir: TMP });
  const sj = await waitFor(() => {
    try {
      return JSON.parse(fs.readFileSync(path.join(home, "server.json"), "utf8"));
    } catch {
      return null;
    }
  }, 60000, "the started server's server.json");
  assert.equal(String(sj.port), process.env.MEMCLI_TEST_FREE_PORT);
  fs.writeFileSync(path.join(TMP, "started-server.pid"), String(sj.pid)); // the pytest wrapper stops it
  const made = await waitFor(async () => {
    try {
      return await client.api("POST", "/api/memories", { content: "The cold-start test remembers this line." }, 5000);
    } catch {
      return null;
    }
  }, 60000, "the started server");
  assert.equal(made.ok, true);
  assert.match(logText(home), /started the server: pid \d+/);
});
