// The memcli_* tools against a real `memcli serve`: the MCP tools' results (the CLI's JSON shapes) and
// memcli's own error messages; bad arguments refused before anything is sent.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MemcliClient } from "../../openclaw/lib/client.js";
import { TOOLS, runTool } from "../../openclaw/lib/tools.js";
import { HOME, rest } from "./helpers.mjs";

const client = new MemcliClient({ env: { ...process.env, MEMCLI_HOME: HOME } });
const call = async (name, params) => (await runTool(client, name, params)).details;
const ITEM_KEYS = ["memory_id", "content", "tags", "scope", "namespace", "importance", "key", "created_at", "updated_at"];

test("remember → recall → get → update → forget, with the MCP tools' shapes", async () => {
  const res = await runTool(client, "memcli_remember", { content: "The staging cluster runs on Hetzner in Falkenstein (FSN1).", tags: ["infra"], agent: "openclaw" });
  const made = res.details;
  assert.equal(made.ok, true);
  assert.deepEqual(made.duplicate_of, []);
  assert.equal(JSON.parse(res.content[0].text).memory_id, made.memory_id); // what the model reads is the same JSON

  const hits = await call("memcli_recall", { query: "Where does the staging cluster run? Hetzner Falkenstein", top_k: 3, agent_filter: "agent:openclaw" });
  assert.equal(hits[0].memory_id, made.memory_id);
  for (const k of [...ITEM_KEYS, "score"]) assert.ok(k in hits[0], k);
  assert.equal(hits[0].scope, "agent:openclaw");
  assert.deepEqual(await call("memcli_recall", { query: "staging cluster Hetzner", tags: ["no-such-tag"] }), []);

  const short = made.memory_id.replace(/-/g, "").slice(-8);
  const got = await call("memcli_get", { memory_id: short });
  assert.equal(got.memory_id, made.memory_id);
  assert.equal(got.version, 1);

  await assert.rejects(call("memcli_update", { memory_id: short, content: "stale write", expected_version: 7 }), (err) => {
    assert.match(err.message, /version/);
    return true;
  });
  assert.deepEqual(await call("memcli_update", { memory_id: short, content: "The staging cluster runs on Hetzner in Nuremberg (NBG1).", expected_version: 1 }),
    { ok: true, memory_id: made.memory_id, version: 2 });
  assert.match((await call("memcli_get", { memory_id: made.memory_id })).content, /Nuremberg/);

  assert.deepEqual(await call("memcli_forget", { memory_id: made.memory_id }), { ok: true, memory_id: made.memory_id });
  const direct = await rest("GET", `/api/memories/${made.memory_id}`);
  assert.equal(direct.status, 404);
  await assert.rejects(call("memcli_get", { memory_id: made.memory_id }), (err) => {
    assert.equal(err.message, direct.data.error); // memcli's own message, as the MCP tool reports it
    return true;
  });
});

test("an id is looked up in the namespace named (else the server's), as by the MCP tools", async () => {
  const made = await call("memcli_remember", { content: "The ops namespace keeps the pager rota in Opsgenie.", namespace: "ops" });
  for (const [name, extra] of [["memcli_get", {}], ["memcli_update", { content: "bent from default" }], ["memcli_forget", {}]]) {
    await assert.rejects(call(name, { memory_id: made.memory_id, ...extra }), (err) => {
      assert.equal(err.message, `no memory with id ${made.memory_id} in namespace 'default'`, name);
      return true;
    });
  }
  const short = made.memory_id.replace(/-/g, "").slice(-8);
  const got = await call("memcli_get", { memory_id: short, namespace: "ops" });
  assert.equal(got.version, 1); // nothing changed above
  assert.match(got.content, /Opsgenie/);
  assert.deepEqual(await call("memcli_update", { memory_id: short, namespace: "ops", importance: 0.9 }),
    { ok: true, memory_id: made.memory_id, version: 2 });
  assert.deepEqual(await call("memcli_forget", { memory_id: short, namespace: "ops" }), { ok: true, memory_id: made.memory_id });
});

test("bad input gets memcli's clear error and stores nothing", async () => {
  const before = (await rest("GET", "/api/stats")).data.total;
  const empty = await rest("POST", "/api/memories", { content: "   " });
  await assert.rejects(call("memcli_remember", { content: "   " }), (err) => err.message === empty.data.error);
  await assert.rejects(call("memcli_remember", { content: "x", tag: "bug" }), /unknown argument\(s\): tag; allowed: content, tags/);
  await assert.rejects(call("memcli_remember", { content: "x", importance: "high" }), /importance must be a number/);
  await assert.rejects(call("memcli_remember", { content: "x", importance: 3 }), /between 0 and 1/);
  await assert.rejects(call("memcli_recall", {}), /missing required argument: query/);
  await assert.rejects(call("memcli_recall", { query: "x", top_k: 0 }), /between 1 and 100/);
  await assert.rejects(call("memcli_update", { memory_id: "zz" }), (err) => err.message.length > 0 && !/HTTP/.test(err.message));
  assert.equal((await rest("GET", "/api/stats")).data.total, before);
});

test("every tool's schema forbids unknown arguments (as the MCP tools do)", () => {
  for (const [name, tool] of Object.entries(TOOLS)) {
    assert.equal(tool.parameters.additionalProperties, false, name);
    assert.ok(name.startsWith("memcli_"));
  }
});
