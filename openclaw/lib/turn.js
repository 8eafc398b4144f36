// What OpenClaw hands the hooks, turned into the payloads memcli's hook routes take (the Claude Code hook
// payloads: session_id, prompt, last_assistant_message, cwd). Only text is carried: tool calls, tool results
// and thinking stay out, as in the Stop hook.

const INTERNAL = /^<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>/;

/** The plain text of a message's content: a string, or the `text` blocks of a block list. */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((b) => b && typeof b === "object" && b.type === "text" && typeof b.text === "string")
      .map((b) => b.text)
      .join("\n");
  }
  return "";
}

/** The turn's user prompt and the assistant's answer to it (its last three text replies), from messages. */
export function lastTurn(messages) {
  const list = Array.isArray(messages) ? messages : [];
  let start = -1;
  for (let i = list.length - 1; i >= 0; i--) {
    const m = list[i];
    if (m?.role !== "user") continue;
    const text = textOf(m.content).trim();
    if (text && !INTERNAL.test(text)) {
      start = i;
      break;
    }
  }
  if (start < 0) return { prompt: "", reply: "" };
  const replies = list
    .slice(start + 1)
    .filter((m) => m?.role === "assistant")
    .map((m) => textOf(m.content).trim())
    .filter(Boolean);
  return { prompt: textOf(list[start].content).trim(), reply: replies.slice(-3).join("\n\n") };
}

/** Has this session answered before? (No assistant message in its history: its first turn.) */
export function firstTurn(messages) {
  return !(Array.isArray(messages) && messages.some((m) => m?.role === "assistant"));
}

/** The session a hook belongs to: OpenClaw's session id, else its key, else the run. */
export function sessionOf(ctx) {
  return String(ctx?.sessionId || ctx?.sessionKey || ctx?.runId || "openclaw");
}

/** The prompt of this turn: the request itself when the runner gives it, else the prepared prompt. */
export function promptOf(event) {
  if (typeof event?.currentUserMessage === "string" && event.currentUserMessage.trim()) return event.currentUserMessage;
  return typeof event?.prompt === "string" ? event.prompt : "";
}

/** A subagent's run (session key agent:<id>:subagent:…): captured only if memcli's capture_subagents is on. */
export function isSubagent(ctx) {
  return /:subagent:/.test(String(ctx?.sessionKey || ""));
}
