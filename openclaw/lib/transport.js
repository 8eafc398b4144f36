// Plumbing: one HTTP request within a deadline, the server's proof (the HMAC of memcli/proof.py), the log
// line, the Stop spool and starting the home's server. Node's standard library only. Nothing written to disk
// here keeps a secret: a spooled payload is cleaned first, a log line redacted (redact.js, memcli's rules).

import { spawn } from "node:child_process";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import path from "node:path";

import { cleanPayload, redact } from "./redact.js";

export const IDLE_TIMEOUT_S = 1800;
export const START_GRACE_S = 20; // a server started less than this ago (by a hook or by us): do not start another
export const VERIFIED = "verified"; // hooks-state/verified: verifiedMark() of the server that proved it is the home's
const BOOT_ID = "/proc/sys/kernel/random/boot_id";

/** Nothing listens on the port (connection refused). */
export class ServerDown extends Error {
  name = "ServerDown";
}
/** The deadline passed. */
export class Timeout extends Error {
  name = "Timeout";
}

/** One line in <home>/logs/hooks.log (the hooks' log), secrets redacted; never throws. Callers log what
 * happened (events, ports, errors), never the turn's text. */
export function log(home, message) {
  try {
    const dir = path.join(home, "logs");
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, "hooks.log");
    try {
      if (fs.statSync(file).size > 1_000_000) fs.renameSync(file, path.join(dir, "hooks.log.1"));
    } catch {
      // no log yet
    }
    const stamp = new Date().toISOString().slice(0, 19);
    const text = redact(String(message)).split(/\s+/).join(" ").slice(0, 500);
    fs.appendFileSync(file, `${stamp} openclaw[${process.pid}] ${text}\n`, { mode: 0o600 });
  } catch {
    // a full or read-only disk must not break the turn
  }
}

/** `http(s)://host[:port][/prefix]` → {tls, host, port, prefix}. */
export function splitUrl(url) {
  const u = new URL(url);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`not an http(s) URL: ${url}`);
  const tls = u.protocol === "https:";
  return {
    tls,
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port ? Number(u.port) : tls ? 443 : 80,
    prefix: u.pathname.replace(/\/+$/, ""),
  };
}

/**
 * One HTTP/1.1 request that never outlives `deadline` (a Date.now() time): resolves {status, text}, rejects
 * with ServerDown (refused), Timeout, or the network error.
 */
export function request({ host = "127.0.0.1", port, tls = false, method, path: urlPath, body, headers = {}, deadline }) {
  return new Promise((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      reject(new Timeout("deadline passed before connecting"));
      return;
    }
    const data = body === undefined ? null : Buffer.from(typeof body === "string" ? body : JSON.stringify(body), "utf8");
    const hdrs = { "User-Agent": "memcli-openclaw", Connection: "close", ...headers };
    if (data) {
      hdrs["Content-Type"] = "application/json";
      hdrs["Content-Length"] = String(data.length);
    }
    const req = (tls ? https : http).request({ host, port, method, path: urlPath, headers: hdrs, agent: false });
    let done = false;
    const finish = (fn, value) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        fn(value);
      }
    };
    const timer = setTimeout(() => {
      finish(reject, new Timeout("no complete answer before the deadline"));
      req.destroy();
    }, remaining);
    req.on("error", (err) => finish(reject, err.code === "ECONNREFUSED" ? new ServerDown(err.message) : err));
    req.on("response", (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => finish(resolve, { status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", (err) => finish(reject, err));
    });
    if (data) req.write(data);
    req.end();
  });
}

/** What a server holding `token` answers to `nonce` on `port` (memcli/proof.py's server_proof). */
export function serverProof(token, nonce, port) {
  return createHmac("sha256", Buffer.from(token, "utf8")).update(`memcli-server-proof\n${nonce}\n${Number(port)}`).digest("hex");
}

/** Does `proof` show that the server on `port` holds `token`? (Constant-time comparison.) */
export function proofOk(token, nonce, port, proof) {
  const want = Buffer.from(serverProof(token, nonce, port), "utf8");
  const got = Buffer.from(String(proof ?? ""), "utf8");
  return got.length === want.length && timingSafeEqual(got, want);
}

/** What tells the running process `pid` from every later one that gets its pid (memcli/proof.py's
 * process_identity): its start time (field 22 of /proc/<pid>/stat) and the boot's id; null without /proc, or
 * when the process is gone or a zombie. */
export function processIdentity(pid) {
  let stat, boot;
  try {
    stat = fs.readFileSync(`/proc/${Number(pid)}/stat`, "latin1");
    boot = fs.readFileSync(BOOT_ID, "latin1").trim();
  } catch {
    return null;
  }
  // "pid (comm) state …": comm may hold spaces and ")", so the fields start after the last ")"
  const fields = stat.slice(stat.lastIndexOf(")") + 1).trim().split(/\s+/);
  if (fields.length < 20 || ["Z", "X", "x"].includes(fields[0]) || !/^\d+$/.test(fields[19]) || !boot) return null;
  return `${fields[19]} ${boot}`;
}

/** What hooks-state/verified holds once the server process `pid` proved on `port` that it is the home's
 * (memcli/proof.py's verified_mark, shared with the hooks and the CLI); null when nothing may be remembered. */
export function verifiedMark(port, pid) {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const ident = processIdentity(pid);
  return ident === null ? null : `${Number(port)} ${pid} ${ident}`;
}

export function newNonce() {
  return randomBytes(16).toString("hex");
}

/** Does something listen on 127.0.0.1:port? (A bare connect: nothing is sent.) */
export function portTaken(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    const end = (value) => {
      sock.destroy();
      resolve(value);
    };
    sock.setTimeout(200, () => end(false));
    sock.on("connect", () => end(true));
    sock.on("error", () => end(false));
  });
}

/**
 * Queue a payload where the home's server drains it at start (atomic: temp file, then rename). The payload
 * is cleaned first, as the Claude Code hook client does (redact.py's clean_payload_bytes): every text field
 * redacted, ids and paths kept, lone surrogates replaced; no secret waits on disk for the server.
 */
export function spool(home, payload, sub = "spool") {
  const dir = path.join(home, sub);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = `${Date.now()}-${randomBytes(4).toString("hex")}.json`;
  const tmp = path.join(dir, `.${name}.tmp`);
  const fd = fs.openSync(tmp, "w", 0o600);
  try {
    fs.writeSync(fd, JSON.stringify(cleanPayload(payload)));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, path.join(dir, name));
  return path.join(dir, name);
}

/**
 * Start the home's `memcli serve` detached (unless one was started less than START_GRACE_S ago), on `port`,
 * else the usual port when free, else any free port. Resolves true when it started one. A missing memcli
 * command is logged, never thrown.
 */
export async function startServer(s, port) {
  const state = path.join(s.home, "hooks-state");
  const stamp = path.join(state, "server-start.stamp");
  try {
    if (Date.now() / 1000 - fs.statSync(stamp).mtimeMs / 1000 < START_GRACE_S) return false;
  } catch {
    // never started
  }
  const logs = path.join(s.home, "logs");
  fs.mkdirSync(state, { recursive: true, mode: 0o700 });
  fs.mkdirSync(logs, { recursive: true, mode: 0o700 });
  if (port === undefined || port === null) port = (await portTaken(s.startPort)) ? 0 : s.startPort;
  fs.writeFileSync(stamp, String(Date.now() / 1000), { mode: 0o600 });
  const [cmd, ...pre] = s.command;
  const args = [...pre, "serve", "--port", String(port), "--idle-timeout", String(s.env.MEMCLI_HOOK_IDLE_TIMEOUT || IDLE_TIMEOUT_S)];
  const out = fs.openSync(path.join(logs, "server.log"), "a", 0o600);
  try {
    const child = spawn(cmd, args, {
      cwd: s.home,
      detached: true,
      stdio: ["ignore", out, out],
      env: { ...s.env, MEMCLI_HOME: s.home },
    });
    child.on("error", (err) => log(s.home, `could not start the memcli server (${cmd}): ${err.message}`));
    child.unref();
    if (child.pid) {
      fs.writeFileSync(path.join(state, "server.pid"), String(child.pid), { mode: 0o600 });
      log(s.home, `started the server: pid ${child.pid}, port ${port || "any free one"}`);
    }
  } finally {
    fs.closeSync(out);
  }
  return true;
}
