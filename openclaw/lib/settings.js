// Where memcli's home is and how to reach its server: the same rules as the Claude Code hook client
// (src/memcli/hooks/transport.py), read from the same files, so OpenClaw and Claude Code share one server.
//
// Each setting, first found wins:
//   home      plugin config `home`, MEMCLI_HOME, else the platform's user data dir (XDG_DATA_HOME/memcli,
//             ~/.local/share/memcli; ~/Library/Application Support/memcli on macOS)
//   server    the port in <home>/server.json while its process runs, then MEMCLI_PORT; a server started here
//             listens on MEMCLI_PORT, else [server] port of <home>/config.toml, else 8765 (any free one if taken)
//   token     MEMCLI_TOKEN, else [server] token, else <home>/auth.json; the home id from auth.json
//   deadline  MEMCLI_HOOK_DEADLINE_MS, else plugin config `deadlineMs`, else [hooks] deadline_ms, else 1500 ms
//   team      MEMCLI_API_URL + MEMCLI_API_TOKEN (else seed 002's MNEMO_API_URL + MNEMO_API_TOKEN), else plugin
//             config `apiUrl` + `apiToken` (or mem9's `apiKey`), else api_url + api_token of config.toml: then only
//             that server is used and nothing local is started
//   memcli    plugin config `command` (a path, or [path, args...]), MEMCLI_BIN, else `memcli` on PATH

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const DEFAULT_PORT = 8765;
export const DEFAULT_DEADLINE_MS = 1500;
const SAFE = /^[A-Za-z0-9_-]{8,}$/;

/** platformdirs' user_data_dir("memcli"), as memcli computes it. */
export function defaultHome(env = process.env, platform = process.platform) {
  if (platform === "darwin") return path.join(os.homedir(), "Library", "Application Support", "memcli");
  if (platform === "win32") {
    return path.join(env.LOCALAPPDATA || path.join(os.homedir(), "AppData", "Local"), "memcli");
  }
  const base = (env.XDG_DATA_HOME || "").trim() || path.join(os.homedir(), ".local", "share");
  return path.join(base, "memcli");
}

function expandUser(p) {
  return p === "~" || p.startsWith("~/") ? path.join(os.homedir(), p.slice(1)) : p;
}

/** The file's bytes as text, or null. */
export function readText(file) {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

function parseJson(text) {
  if (text == null) return null;
  try {
    const data = JSON.parse(text);
    return data && typeof data === "object" && !Array.isArray(data) ? data : null;
  } catch {
    return null;
  }
}

/** A valid TCP port, or null. */
export function toPort(value) {
  const n = typeof value === "number" ? value : /^\d+$/.test(String(value ?? "")) ? Number(value) : NaN;
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : null;
}

/** The few keys memcli's config.toml holds that matter here: top-level api_url/api_token, [server] port and
 * token, [hooks] deadline_ms. A line-level reader (no TOML library: the plugin has no dependencies); a value
 * it cannot read is left to memcli itself, which reports a broken config. */
export function readConfigToml(home) {
  const out = { top: {}, server: {}, hooks: {} };
  const text = readText(path.join(home, "config.toml"));
  if (!text) return out;
  let section = "top";
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const header = /^\[\s*([A-Za-z0-9_.-]+)\s*\]/.exec(line);
    if (header) {
      section = header[1];
      continue;
    }
    const kv = /^([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(-?\d+))\s*(?:#.*)?$/.exec(line);
    if (!kv || !(section in out)) continue;
    const value = kv[2] !== undefined ? kv[2].replace(/\\(["\\])/g, "$1") : kv[3] !== undefined ? kv[3] : Number(kv[4]);
    out[section][kv[1]] = value;
  }
  return out;
}

/** {homeId, token} of <home>/auth.json (made by the home's server). */
export function readAuth(home) {
  const data = parseJson(readText(path.join(home, "auth.json"))) || {};
  const ok = (v) => (typeof v === "string" && SAFE.test(v) ? v : null);
  return { homeId: ok(data.home_id), token: ok(data.token) };
}

/** Is this process running (and ours to signal)? Unknown pid: assume yes, as the hook client does. */
export function pidAlive(pid) {
  if (!pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code !== "ESRCH" && err.code !== "EPERM";
  }
}

/** {port, pid} of <home>/server.json, written by the home's running server. */
export function readServerJson(home) {
  const data = parseJson(readText(path.join(home, "server.json")));
  if (!data) return {};
  const port = toPort(data.port);
  const pid = Number.isInteger(data.pid) && data.pid > 0 ? data.pid : null;
  return port ? { port, pid } : {};
}

function commandOf(value) {
  if (Array.isArray(value) && value.length && value.every((v) => typeof v === "string" && v)) return value;
  if (typeof value === "string" && value.trim()) return [value.trim()];
  return null;
}

/** Everything the plugin needs to reach memcli, resolved once per call (the files change under us). */
export class Settings {
  constructor(env = process.env, pluginConfig = {}) {
    const cfg = pluginConfig && typeof pluginConfig === "object" ? pluginConfig : {};
    this.home = path.resolve(expandUser(env.MEMCLI_HOME || cfg.home || defaultHome(env)));
    const toml = readConfigToml(this.home);
    this.envPort = toPort(env.MEMCLI_PORT);
    this.startPort = this.envPort || toPort(toml.server.port) || DEFAULT_PORT;
    const fixedToken = env.MEMCLI_TOKEN || (typeof toml.server.token === "string" ? toml.server.token : "") || null;
    this.tokenFromHome = !fixedToken;
    this.token = fixedToken;
    const deadline = Number(env.MEMCLI_HOOK_DEADLINE_MS || cfg.deadlineMs || toml.hooks.deadline_ms || DEFAULT_DEADLINE_MS);
    this.deadlineMs = Number.isFinite(deadline) ? Math.max(50, Math.trunc(deadline)) : DEFAULT_DEADLINE_MS;
    // seed 002's (mem9) names too: MNEMO_API_URL / MNEMO_API_TOKEN, and `apiKey` in the plugin config; ours win
    const envUrl = env.MEMCLI_API_URL || env.MNEMO_API_URL;
    const fromEnv = envUrl ? [envUrl, env.MEMCLI_API_TOKEN || env.MNEMO_API_TOKEN] : null;
    const fromPlugin = cfg.apiUrl ? [cfg.apiUrl, cfg.apiToken || cfg.apiKey] : null;
    const fromToml = typeof toml.top.api_url === "string" ? [toml.top.api_url, toml.top.api_token] : null;
    const [apiUrl, apiToken] = fromEnv || fromPlugin || fromToml || [null, null];
    this.apiUrl = apiUrl ? String(apiUrl).replace(/\/+$/, "") : null;
    this.apiToken = apiToken ? String(apiToken) : null;
    this.command = commandOf(cfg.command) || commandOf(env.MEMCLI_BIN) || ["memcli"];
    this.agent = typeof cfg.agent === "string" && /^[A-Za-z0-9._-]{1,64}$/.test(cfg.agent) ? cfg.agent : "openclaw";
    this.env = env;
    this.port = null;
    this.pid = null;
    this.homeId = null;
    this.refresh();
  }

  /** Read auth.json and server.json again (a server started a moment ago writes them). */
  refresh() {
    const auth = readAuth(this.home);
    this.homeId = auth.homeId || this.homeId;
    if (this.tokenFromHome) this.token = auth.token || this.token;
    const sj = readServerJson(this.home);
    const alive = Boolean(sj.port) && pidAlive(sj.pid);
    this.port = alive ? sj.port : null;
    this.pid = alive ? sj.pid : null;
  }

  /** Ports to try, best first: the running server's own record, then MEMCLI_PORT. */
  candidates() {
    const out = [this.port, this.envPort].filter((p) => p);
    return out.length === 2 && out[0] === out[1] ? [out[0]] : out;
  }

  get teamMode() {
    return Boolean(this.apiUrl);
  }
}
