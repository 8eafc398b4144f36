// openclaw/lib/redact.js is memcli's src/memcli/redact.py in JavaScript: the same patterns (their Python
// text), the same output as Python's redact() and clean_payload() on every case of bench/data/redact_cases.json,
// on ordinary texts and on generated ones, no input that makes it backtrack for long, and no secret of a turn
// in the bytes the plugin leaves on disk (the spool, spool-team, hooks.log) while memcli is down.
//
// Run by tests/test_openclaw_plugin.py, which writes Python's answers to the JSON file MEMCLI_TEST_REDACT:
// {sources, words, payload_ids, texts: {input: python redact(input)}, payloads: [[input, clean_payload(input)]],
// secrets: [case values]}.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { test } from "node:test";

import { afterTurn } from "../../openclaw/index.js";
import { MemcliClient } from "../../openclaw/lib/client.js";
import {
  PAYLOAD_IDS, SOURCES, WORDS, cleanPayload, fullmatcher, redact, versionLike, wordlike,
} from "../../openclaw/lib/redact.js";
import { runTool } from "../../openclaw/lib/tools.js";
import { spool } from "../../openclaw/lib/transport.js";
import { freshHome, logText } from "./helpers.mjs";

const TMP = process.env.MEMCLI_TEST_TMP;
const PY = JSON.parse(fs.readFileSync(process.env.MEMCLI_TEST_REDACT, "utf8"));

const show = (s) => JSON.stringify(s.length > 300 ? `${s.slice(0, 300)}…` : s);

test("the patterns, the placeholder words and the payload's id fields are redact.py's", () => {
  const js = {};
  for (const [name, value] of Object.entries(SOURCES)) {
    js[name] = name === "TOKENS" ? value.map(([label, source]) => [label, source, ""]) : value;
  }
  assert.deepEqual(js, PY.sources);
  assert.deepEqual([...WORDS].sort(), PY.words);
  assert.deepEqual([...PAYLOAD_IDS].sort(), PY.payload_ids);
});

test("redact() gives Python's output on every shared case, ordinary and generated text", (t) => {
  const texts = Object.entries(PY.texts);
  assert.ok(texts.length >= 500, `only ${texts.length} texts`);
  const differ = [];
  for (const [input, want] of texts) {
    const got = redact(input);
    if (got !== want) differ.push(`in:     ${show(input)}\npython: ${show(want)}\njs:     ${show(got)}`);
  }
  assert.equal(differ.length, 0, `${differ.length} of ${texts.length} differ:\n${differ.slice(0, 10).join("\n\n")}`);
  const changed = texts.filter(([input, want]) => input !== want).length;
  t.diagnostic(`${texts.length} texts agree (${changed} redacted by both, ${texts.length - changed} left as they are)`);
});

test("cleanPayload() is clean_payload(): ids kept, text redacted, lone surrogates replaced", () => {
  assert.ok(PY.payloads.length >= 3);
  for (const [input, want] of PY.payloads) assert.deepEqual(cleanPayload(input), want);
});

test("the checks computed without backtracking accept exactly what redact.py's patterns accept", () => {
  const WORDLIKE = fullmatcher(SOURCES.WORDLIKE[0]);
  const VERSION = fullmatcher(SOURCES.VERSION[0]);
  let seed = 7;
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const word = (alphabet, max) => Array.from({ length: rand(max + 1) }, () => alphabet[rand(alphabet.length)]).join("");
  for (let i = 0; i < 20000; i++) {
    const w = word("aAbBZz19", 12); // short: the pattern itself is exponential on long ones
    assert.equal(wordlike(w), WORDLIKE.test(w), `wordlike(${JSON.stringify(w)})`);
    const v = word("v1.2-a_x#٣", 10);
    assert.equal(versionLike(v), VERSION.test(v), `versionLike(${JSON.stringify(v)})`);
  }
});

test("no input makes it backtrack: 32,000-character adversarial texts take well under a second each", (t) => {
  const units = ["a.", "c", "a:b@", "aA", "password=", "-", "x://", "a-", "Ac", "c_", "1c", "token ", "password is ",
    "\"", "eyJab.", "aB3/", "İ", "password is 1.", "password is a-", "<private>", "-----BEGIN PRIVATE KEY-----",
    "curl -u ", "curl x.-ux", "mysql -p", "!a:1:b:c:", "a:1:", "\\:", "密码是 ", "密码 ", "auth: ", "a\u200b", "\u200b"];
  const texts = units.map((u) => [JSON.stringify(u), u.repeat(Math.floor(32_000 / u.length))]);
  // redact.py's _WORDLIKE takes hours on this one 40-character key (2^37 ways to split the ones), 32,000 times
  texts.push(["'1'*38 + 'aB', repeated", `${"1".repeat(38)}aB `.repeat(780)]);
  texts.push(["'password is 1.1.1…#'", `password is ${"1.".repeat(15_990)}#`]);
  let worst = 0;
  for (const [name, text] of texts) {
    const t0 = performance.now();
    redact(text);
    const ms = performance.now() - t0;
    worst = Math.max(worst, ms);
    assert.ok(ms < 1000, `${name}: ${ms.toFixed(0)} ms`);
  }
  t.diagnostic(`${texts.length} adversarial texts of ~32,000 characters: the slowest took ${worst.toFixed(1)} ms`);
});

const SECRET_TURN = {
  anthropic: "sk-ant-api03-" + "Zq7xR2mK9vLw4Tn8Pb3Yc6Hd1Jf5Gs0A",
  github: "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
  password: "Tr0ub4dor&3xq",
  aws: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  jwt: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
  dbpass: "s3cr3t-Pa55word",
  pem: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
};

function turnWithSecrets() {
  const s = SECRET_TURN;
  return {
    success: true,
    messages: [
      { role: "user", content: `Deploy staging with ${s.anthropic} and ${s.github}; the admin password is ${s.password}. ` +
        `AWS secret: ${s.aws}. The nightly export moves to 04:30 UTC.` },
      { role: "assistant", content: [{ type: "text", text: `Done. I used Authorization: Bearer ${s.jwt} and ` +
        `postgres://admin:${s.dbpass}@db.internal:5432/app; the key was\n-----BEGIN PRIVATE KEY-----\n${s.pem}\n` +
        "-----END PRIVATE KEY-----\nThe export now starts at 04:30 UTC." }] },
    ],
  };
}

function filesUnder(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

function assertNoSecretOnDisk(home) {
  for (const file of filesUnder(home)) {
    const bytes = fs.readFileSync(file);
    for (const [name, secret] of Object.entries(SECRET_TURN)) {
      assert.ok(!bytes.includes(Buffer.from(secret)), `the ${name} secret is in ${file}:\n${bytes.toString("utf8")}`);
    }
  }
}

function spooled(home, sub) {
  const dir = path.join(home, sub);
  const names = fs.readdirSync(dir).filter((n) => n.endsWith(".json"));
  assert.equal(names.length, 1, `${dir}: ${names}`);
  return JSON.parse(fs.readFileSync(path.join(dir, names[0]), "utf8"));
}

async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

test("memcli down: the turn is spooled without its secrets (spool/)", async () => {
  const home = freshHome(TMP, "redact-local");
  const client = new MemcliClient({ env: { ...process.env, MEMCLI_HOME: home, MEMCLI_BIN: "/nonexistent/memcli", MEMCLI_HOOK_DEADLINE_MS: "800" } });
  await afterTurn(client, turnWithSecrets(), { sessionId: "r1", workspaceDir: TMP });
  const payload = spooled(home, "spool");
  assert.match(payload.prompt, /04:30 UTC/);
  assert.match(payload.prompt, /\[REDACTED:anthropic-key\]/);
  assert.match(payload.last_assistant_message, /\[REDACTED:private-key\]/);
  assert.equal(payload.session_id, "r1");
  assertNoSecretOnDisk(home);
});

test("team server down: the turn waits in spool-team without its secrets; the log keeps no recall query", async () => {
  const home = freshHome(TMP, "redact-team");
  const port = await closedPort();
  const env = { ...process.env, MEMCLI_HOME: home, MEMCLI_API_URL: `http://127.0.0.1:${port}`, MEMCLI_API_TOKEN: "space-token-0123456789" };
  const client = new MemcliClient({ env });
  await afterTurn(client, turnWithSecrets(), { sessionId: "r2", workspaceDir: TMP });
  const payload = spooled(home, "spool-team");
  assert.match(payload.last_assistant_message, /04:30 UTC/);
  await assert.rejects(runTool(client, "memcli_recall", { query: `which deploy used ${SECRET_TURN.github} confidential-plan-x` }));
  assert.match(logText(home), /GET \/api\/search: /);
  assert.doesNotMatch(logText(home), /confidential-plan-x/);
  assertNoSecretOnDisk(home);
});

test("spool() itself cleans what it is given, whoever calls it", () => {
  const home = freshHome(TMP, "redact-spool");
  const file = spool(home, { session_id: "s-1", cwd: "/work/password=hunter22", prompt: `key ${SECRET_TURN.github} \ud800!` }, "spool-team");
  assert.deepEqual(JSON.parse(fs.readFileSync(file, "utf8")),
    { session_id: "s-1", cwd: "/work/password=hunter22", prompt: "key [REDACTED:github-token] \ufffd!" });
});
