// Shared by the plugin's unit tests: run by tests/test_openclaw_plugin.py with a real `memcli serve` of the
// home MEMCLI_HOME (hash embedder) on MEMCLI_TEST_PORT.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

export const HOME = process.env.MEMCLI_HOME;
export const PORT = Number(process.env.MEMCLI_TEST_PORT);

export function auth(home = HOME) {
  return JSON.parse(fs.readFileSync(path.join(home, "auth.json"), "utf8"));
}

/** A REST call to the real server, as a test's own check (not through the plugin). */
export async function rest(method, urlPath, body, home = HOME, port = PORT) {
  const a = auth(home);
  const res = await fetch(`http://127.0.0.1:${port}${urlPath}`, {
    method,
    headers: { Authorization: `Bearer ${a.token}`, "X-Memcli-Home": a.home_id, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, data: await res.json().catch(() => null) };
}

export async function waitFor(fn, ms = 15000, what = "the condition") {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function logText(home = HOME) {
  try {
    return fs.readFileSync(path.join(home, "logs", "hooks.log"), "utf8");
  } catch {
    return "";
  }
}

/** A local HTTP server that records every request (method, path, headers, body) and answers with `answer`. */
export async function recorder(answer) {
  const seen = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const rec = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      seen.push(rec);
      const out = await answer(rec);
      if (out === "hang") return; // never answers
      res.writeHead(out.status ?? 200, { "Content-Type": "application/json" });
      res.end(typeof out.body === "string" ? out.body : JSON.stringify(out.body ?? {}));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { seen, port: server.address().port, close: () => { server.closeAllConnections?.(); server.close(); } };
}

export function freshHome(base, name) {
  const dir = path.join(base, name);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
