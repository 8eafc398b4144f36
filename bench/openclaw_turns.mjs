// Driven by bench/openclaw.py: the OpenClaw plugin's own hook handlers (what OpenClaw awaits around a turn),
// timed against the home's warm `memcli serve`. Prints one JSON object on stdout.
//
//   node bench/openclaw_turns.mjs prompts.json
import fs from "node:fs";
import { performance } from "node:perf_hooks";

import { afterTurn, beforePrompt } from "../openclaw/index.js";
import { MemcliClient } from "../openclaw/lib/client.js";

const { prompts, firstTurns, cwd } = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const client = new MemcliClient({ env: process.env });
const HISTORY = [
  { role: "user", content: "Let us look at the project together." },
  { role: "assistant", content: [{ type: "text", text: "Sure, what do you need?" }] },
];
const REPLY = "Here is what I found, with the reasons and the files involved: the change is in the config loader, " +
  "the tests cover it, and the decision is written down in the design notes.";

async function timed(fn) {
  const t0 = performance.now();
  const out = await fn();
  return [performance.now() - t0, out];
}

const out = { recall: [], injected: 0, capture: [], first: [], firstInjected: 0 };
for (let i = 0; i < 3; i++) { // warm-up: the server's first recall opens its indexes
  await beforePrompt(client, { prompt: prompts[i], messages: HISTORY }, { sessionId: `warm-${i}`, workspaceDir: cwd });
}
for (const [i, prompt] of prompts.entries()) {
  const ctx = { sessionId: `bench-${process.pid}-${i}`, sessionKey: "agent:main:main", workspaceDir: cwd, trigger: "user" };
  const [ms, res] = await timed(() => beforePrompt(client, { prompt, messages: HISTORY }, ctx));
  out.recall.push(ms);
  if (res?.prependContext) out.injected += 1;
  const turn = { success: true, messages: [{ role: "user", content: prompt }, { role: "assistant", content: [{ type: "text", text: `${REPLY} (${i})` }] }] };
  const [cms] = await timed(() => afterTurn(client, turn, ctx));
  out.capture.push(cms);
}
for (let i = 0; i < firstTurns; i++) {
  const ctx = { sessionId: `first-${process.pid}-${i}`, workspaceDir: cwd, trigger: "user" };
  const [ms, res] = await timed(() => beforePrompt(client, { prompt: prompts[i % prompts.length], messages: [] }, ctx));
  out.first.push(ms);
  if (res?.prependContext?.includes('event="SessionStart"')) out.firstInjected += 1;
}
process.stdout.write(`${JSON.stringify(out)}\n`);
