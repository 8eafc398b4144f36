// The plugin's way to memcli: the home's warm local server (found, proven and started exactly as the Claude
// Code hook client does it: src/memcli/hooks/client.py), or a team server. Everything memcli decides —
// relevance gate, budgets, what is captured, redaction, de-duplication — happens on the server; this only
// carries requests and never throws past its callers' deadlines.

import fs from "node:fs";
import path from "node:path";

import { Settings } from "./settings.js";
import {
  ServerDown, Timeout, VERIFIED, log, newNonce, portTaken, proofOk, request, splitUrl, spool, startServer, verifiedMark,
} from "./transport.js";

const TEAM_SPOOL = "spool-team";

/** memcli answered with an error (a tool reports its message to the model). */
export class MemcliError extends Error {
  name = "MemcliError";

  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export class MemcliClient {
  /** `env` and `pluginConfig` are read again on every call: a server started meanwhile is found. */
  constructor({ env = process.env, pluginConfig = {} } = {}) {
    this.env = env;
    this.pluginConfig = pluginConfig || {};
  }

  settings() {
    return new Settings(this.env, this.pluginConfig);
  }

  // ------------------------------------------------------------------ is it this home's server?
  /** Has the server on `port` proven itself already (the very process server.json names now, not a later
   * one that got its pid)? */
  trusted(s, port) {
    if (port !== s.port || !s.pid) return false;
    const mark = verifiedMark(port, s.pid);
    if (mark === null) return false;
    try {
      return fs.readFileSync(path.join(s.home, "hooks-state", VERIFIED), "utf8") === mark;
    } catch {
      return false;
    }
  }

  /** Does whatever listens on `port` prove it holds the home's token? Only a fresh nonce is sent. */
  async provesOurs(s, port, deadline) {
    if (!s.token) return false;
    const nonce = newNonce();
    let answer;
    try {
      answer = await request({ port, method: "GET", path: "/health", headers: { "X-Memcli-Challenge": nonce }, deadline });
    } catch {
      return false;
    }
    const body = parse(answer.text) || {};
    if (answer.status !== 200 || typeof body.proof !== "string" || !proofOk(s.token, nonce, port, body.proof)) {
      return false;
    }
    const mark = s.pid && port === s.port && body.pid === s.pid ? verifiedMark(port, s.pid) : null;
    if (mark !== null) {
      try { // remembered for this server process (shared with the Claude Code hooks): one request next time
        fs.mkdirSync(path.join(s.home, "hooks-state"), { recursive: true, mode: 0o700 });
        fs.writeFileSync(path.join(s.home, "hooks-state", VERIFIED), mark, { mode: 0o600 });
      } catch {
        // the proof still holds for this call
      }
    }
    return true;
  }

  /** The port of a running server of this home that proved itself, or null. */
  async ownServer(s, deadline) {
    if (!s.homeId) return null;
    for (const port of s.candidates()) {
      if (this.trusted(s, port) || (await this.provesOurs(s, port, deadline))) return port;
      log(s.home, `whatever listens on port ${port} did not prove it is this home's server; nothing sent to it`);
    }
    return null;
  }

  /** Start the home's server and wait (until `deadline`) for it to prove itself. */
  async startOwnServer(s, deadline) {
    const port = s.envPort === null ? null : (await portTaken(s.envPort)) ? 0 : s.envPort;
    await startServer(s, port);
    while (Date.now() < deadline - 50) {
      s.refresh();
      if (s.port && s.token && s.homeId && (await this.provesOurs(s, s.port, Math.min(deadline, Date.now() + 300)))) {
        return s.port;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return null;
  }

  /** One request to the home's own server: {status, text}. Refusals that say "not this home" (401, 421)
   * count as no server. Throws ServerDown when none answers as ours (after starting one when `start`). */
  async local(s, method, urlPath, body, deadline, { start = true } = {}) {
    const send = (port) => request({
      port, method, path: urlPath, body, deadline,
      headers: { Authorization: `Bearer ${s.token}`, "X-Memcli-Home": s.homeId },
    });
    let port = await this.ownServer(s, deadline);
    if (port !== null) {
      try {
        const answer = await send(port);
        if (answer.status !== 401 && answer.status !== 421) return answer;
        log(s.home, `the server on port ${port} is not this home's (HTTP ${answer.status}); using our own`);
      } catch (err) {
        if (!(err instanceof ServerDown)) throw err;
      }
    }
    if (!start) throw new ServerDown("no server of this home is running");
    port = await this.startOwnServer(s, deadline);
    if (port === null) throw new Timeout("started this home's memcli server; it was not ready in time");
    return send(port);
  }

  /** One request to the team server: {status, text}. */
  async team(s, method, urlPath, body, deadline) {
    const { tls, host, port, prefix } = splitUrl(s.apiUrl);
    const headers = s.apiToken ? { Authorization: `Bearer ${s.apiToken}` } : {};
    return request({ host, port, tls, method, path: prefix + urlPath, body, headers, deadline });
  }

  // ------------------------------------------------------------------ hooks
  /**
   * Forward one hook payload to memcli's hook routes (POST /hooks/<event>); resolves the server's
   * additionalContext (or ""). Never rejects: every failure is one line in <home>/logs/hooks.log. A Stop
   * the server did not take is queued (the server stores it when it is back).
   */
  async hook(event, payload, budgetMs) {
    const deadline = Date.now() + budgetMs;
    let s;
    try {
      s = this.settings();
      const body = { ...payload, hook_event_name: event };
      let answer;
      if (s.teamMode) {
        answer = await this.team(s, "POST", `/hooks/${event}`, body, deadline);
      } else if (event === "Stop" && (await this.ownServer(s, deadline)) === null) {
        spool(s.home, body); // no server of this home: queue the turn, start the server, return at once
        await this.startOwnServer(s, Date.now());
        log(s.home, "Stop: no server of this home; turn spooled, server started");
        return "";
      } else {
        answer = await this.local(s, "POST", `/hooks/${event}`, body, deadline);
      }
      if (![200, 202, 204].includes(answer.status)) {
        log(s.home, `${event}: server answered HTTP ${answer.status}: ${answer.text.slice(0, 200)}`);
        if (event === "Stop" && ![400, 401, 403, 413].includes(answer.status)) this.queue(s, body);
        return "";
      }
      if (event === "Stop" && s.teamMode) await this.resendTeam(s, deadline);
      const data = answer.status === 200 ? parse(answer.text) : null;
      const ctx = data?.hookSpecificOutput?.additionalContext;
      return typeof ctx === "string" ? ctx : "";
    } catch (err) {
      const home = s?.home ?? this.settings().home;
      if (event === "Stop" && s) {
        this.queue(s, { ...payload, hook_event_name: event });
        log(home, `Stop: no answer (${err.name}: ${err.message}); turn spooled`);
      } else {
        log(home, `${event}: no answer within ${budgetMs} ms (${err.name}: ${err.message})`);
      }
      return "";
    }
  }

  queue(s, body) {
    try {
      spool(s.home, body, s.teamMode ? TEAM_SPOOL : "spool");
    } catch (err) {
      log(s.home, `Stop: could not queue the turn: ${err.message}`);
    }
  }

  /** Team mode: send queued turns (oldest first) while the deadline allows. */
  async resendTeam(s, deadline) {
    const dir = path.join(s.home, TEAM_SPOOL);
    let names = [];
    try {
      names = fs.readdirSync(dir).filter((n) => n.endsWith(".json") && !n.startsWith(".")).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (deadline - Date.now() < 300) return;
      const file = path.join(dir, name);
      const body = parse(fs.readFileSync(file, "utf8"));
      try {
        const answer = await this.team(s, "POST", "/hooks/Stop", body ?? {}, deadline);
        if ([200, 202, 204, 400, 413].includes(answer.status)) fs.unlinkSync(file);
      } catch (err) {
        log(s.home, `Stop: resending a queued turn failed: ${err.message}`);
        return;
      }
    }
  }

  // ------------------------------------------------------------------ REST (the tools, the CLI)
  /** One REST call under /api: resolves the JSON answer, rejects with MemcliError (memcli's message). */
  async api(method, urlPath, body, budgetMs, { start = true } = {}) {
    const deadline = Date.now() + budgetMs;
    const s = this.settings();
    let answer;
    try {
      answer = s.teamMode ? await this.team(s, method, urlPath, body, deadline)
        : await this.local(s, method, urlPath, body, deadline, { start });
    } catch (err) {
      const where = s.teamMode ? `the memcli server at ${s.apiUrl}` : "this home's memcli server";
      log(s.home, `${method} ${urlPath.split("?")[0]}: ${err.name}: ${err.message}`); // no query: a recall's text
      throw new MemcliError(`memcli is not reachable: ${where} did not answer (${err.message})`, 503, "unavailable");
    }
    const data = parse(answer.text);
    if (answer.status >= 400) {
      const message = data && typeof data.error === "string" ? data.error : `HTTP ${answer.status}`;
      throw new MemcliError(message, answer.status, data?.code);
    }
    return data;
  }

  /** Where the plugin talks, for `openclaw memcli status`. */
  async status(budgetMs) {
    const s = this.settings();
    const out = { mode: s.teamMode ? "team" : "local", home: s.home };
    if (s.teamMode) out.server = s.apiUrl;
    else out.server = s.port ? { port: s.port, pid: s.pid, proven: await this.ownServer(s, Date.now() + budgetMs) !== null } : null;
    try {
      out.stats = await this.api("GET", "/api/stats", undefined, budgetMs, { start: false });
      out.ok = true;
    } catch (err) {
      out.ok = false;
      out.error = err.message;
    }
    return out;
  }
}
