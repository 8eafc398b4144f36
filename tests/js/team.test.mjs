// Team mode against a real `memcli serve` over https (a self-signed certificate the process trusts through
// NODE_EXTRA_CA_CERTS) with a space token: the plugin talks to that server only and never starts a local one.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { afterTurn, beforePrompt } from "../../openclaw/index.js";
import { MemcliClient } from "../../openclaw/lib/client.js";
import { runTool } from "../../openclaw/lib/tools.js";
import { freshHome, logText, waitFor } from "./helpers.mjs";

const TMP = process.env.MEMCLI_TEST_TMP;
const URL_ = process.env.MEMCLI_TEST_TEAM_URL;
const TOKEN = process.env.MEMCLI_TEST_TEAM_TOKEN;

function teamClient(home, how = "env", url = URL_) {
  // a generous deadline: this checks the path, not the speed, on 2 cores shared with other work (bench/openclaw.py)
  const env = { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: "/nonexistent/memcli", MEMCLI_HOOK_DEADLINE_MS: "10000" };
  delete env.MEMCLI_API_URL;
  delete env.MEMCLI_API_TOKEN;
  if (how === "env") return new MemcliClient({ env: { ...env, MEMCLI_API_URL: url, MEMCLI_API_TOKEN: TOKEN } });
  return new MemcliClient({ env, pluginConfig: { apiUrl: url, apiToken: TOKEN } });
}

// seed 002 (mem9 / mnemo) users: MNEMO_API_URL + MNEMO_API_TOKEN, or the mem9 plugin config's apiUrl + apiKey
for (const how of ["MNEMO_ env", "mem9 plugin config"]) {
  test(`team server configured by ${how}: the memory lands in the space, nothing local`, async () => {
    const home = freshHome(TMP, `team-${how.replace(/ /g, "-")}`);
    const env = { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: "/nonexistent/memcli", MEMCLI_HOOK_DEADLINE_MS: "10000" };
    for (const k of ["MEMCLI_API_URL", "MEMCLI_API_TOKEN", "MNEMO_API_URL", "MNEMO_API_TOKEN"]) delete env[k];
    const client = how === "MNEMO_ env"
      ? new MemcliClient({ env: { ...env, MNEMO_API_URL: URL_, MNEMO_API_TOKEN: TOKEN } })
      : new MemcliClient({ env, pluginConfig: { apiUrl: URL_, apiKey: TOKEN } });
    const made = (await runTool(client, "memcli_remember", { content: `Written through ${how}: the grebe audit runs weekly.` })).details;
    assert.equal(made.ok, true);
    const got = (await runTool(client, "memcli_get", { memory_id: made.memory_id })).details;
    assert.equal(got.namespace, "crew");
    assert.ok(!fs.existsSync(path.join(home, "server.json")) && !fs.existsSync(path.join(home, "auth.json")));
  });
}

const recallIn = async (client, query) => (await runTool(client, "memcli_recall", { query, top_k: 10 })).details;

for (const how of ["env", "plugin config"]) {
  test(`team server over https, configured by ${how}: recall before the prompt, tools, capture`, async () => {
    const home = freshHome(TMP, `team-${how.replace(" ", "-")}`);
    const client = teamClient(home, how);
    const ctx = { sessionId: `team-${how}`, workspaceDir: TMP, trigger: "user" };
    const res = await beforePrompt(client, { prompt: "Where does the build cache live? s3 ci-cache", messages: [{ role: "assistant", content: "x" }] }, ctx);
    assert.match(res.prependContext, /s3:\/\/ci-cache/);

    const made = (await runTool(client, "memcli_remember", { content: `The ${how} team plugin writes into the crew space.` })).details;
    assert.equal(made.ok, true);
    const got = (await runTool(client, "memcli_get", { memory_id: made.memory_id })).details;
    assert.equal(got.namespace, "crew");

    // two unrelated turns (the hash test embedder would call two variants of one sentence duplicates)
    const [word, turn] = how === "env"
      ? ["heron", ["We decided the heron deploy pipeline runs only from the main branch.",
        "Agreed: the heron deploy pipeline now refuses any branch but main, and the CI config says so."]]
      : ["kestrel", ["Which registry keeps the kestrel container images, and for how long?",
        "The kestrel images are pushed to ghcr.io/acme/kestrel and untagged layers expire after ninety days."]];
    await afterTurn(client, { success: true, messages: [
      { role: "user", content: turn[0] }, { role: "assistant", content: turn[1] },
    ] }, ctx);
    const hit = await waitFor(async () => (await recallIn(client, turn[0])).find((h) => h.content.includes(word) && h.tags.includes("turn")), 30000, "the captured turn in the space");
    assert.equal(hit.namespace, "crew");
    assert.ok(!fs.existsSync(path.join(home, "server.json")) && !fs.existsSync(path.join(home, "auth.json")));
    assert.ok(!/started the server/.test(logText(home)));
  });
}

test("team server down: nothing injected, the turn queued, sent with the next turn that reaches it", async () => {
  const home = freshHome(TMP, "team-down");
  const down = teamClient(home, "env", "https://127.0.0.1:9"); // nothing listens there
  const ctx = { sessionId: "team-down", workspaceDir: TMP, trigger: "user" };
  const t = Date.now();
  assert.equal(await beforePrompt(down, { prompt: "where does the build cache live?", messages: [{ role: "assistant", content: "x" }] }, ctx), undefined);
  assert.ok(Date.now() - t < 3000);
  await afterTurn(down, { success: true, messages: [
    { role: "user", content: "We decided the osprey nightly report moves to Mondays at 07:00." },
    { role: "assistant", content: "Done: the osprey nightly report is now scheduled for Mondays at 07:00, and its owners know." },
  ] }, ctx);
  assert.equal(fs.readdirSync(path.join(home, "spool-team")).filter((n) => n.endsWith(".json")).length, 1);
  assert.match(logText(home), /Stop: no answer/);

  const up = teamClient(home, "env");
  await afterTurn(up, { success: true, messages: [
    { role: "user", content: "Also, the falcon backup job keeps 30 days of snapshots from now on." },
    { role: "assistant", content: "Noted: the falcon backup job retention is now 30 days of snapshots; older ones are pruned." },
  ] }, ctx);
  await waitFor(async () => (await recallIn(up, "osprey nightly report Mondays")).some((h) => h.content.includes("osprey")), 30000, "the queued turn");
  assert.equal(fs.readdirSync(path.join(home, "spool-team")).filter((n) => n.endsWith(".json")).length, 0);
});
