// memcli web view: plain JavaScript over memcli's REST API (no build step).
//
// Memory text is data: every piece of it reaches the page through textContent or an attribute value, never
// as markup (nothing in this file parses HTML). The server's Content-Security-Policy backs this up.
//
// Sign-in: `memcli ui` opens /?code=<one-time code>. The code is removed from the address bar at once and
// traded (POST /api/ui/login) for an HttpOnly session cookie; API calls then send the cookie plus the
// X-Memcli-UI header, which other sites cannot add. The server's token never reaches this page.
"use strict";

const PAGE = 50;
const COLORS = ["#3559e0", "#e0803a", "#2f9e6e", "#b04fc4", "#d4a017", "#d2435d", "#2aa3b8", "#7a6f5a",
                "#6a7fd8", "#8bb34a"];

const state = {
  namespace: null, scope: null, query: "", offset: 0, items: [], selected: null, colorOf: new Map(),
  distillAvailable: null, plan: null, undoTag: null, // distill.js
};

// ------------------------------------------------------------------------------------------- DOM helpers
const $ = (id) => document.getElementById(id);

/** An element with attributes (values are set as data, never parsed) and children (strings become text;
 * arrays, nested to any depth, are spliced in). */
function el(tag, attrs, ...children) {
  const node = tag === "svg" || SVG_TAGS.has(tag) ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.setAttribute("class", v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}
const SVG_TAGS = new Set(["g", "rect", "line", "text", "title", "path"]);

function clear(node) { while (node.firstChild) node.firstChild.remove(); return node; }

/** Bring a panel the person just opened into view when its head is off screen: on a phone the panels stack
 * below the list (a memory's editor, a card, the results below the chart), on a desktop the list may be
 * scrolled far down. A panel already in view stays where it is. */
function reveal(node) {
  if (!node || node.hidden) return;
  const r = node.getBoundingClientRect();
  const h = window.innerHeight || document.documentElement.clientHeight;
  if (r.top >= 0 && (r.bottom <= h || r.top <= h / 3)) return;
  // a panel taller than the screen shows its head; a shorter one scrolls no further than needed
  node.scrollIntoView({ block: r.height <= h ? "nearest" : "start" });
}

function banner(message, kind) {
  const b = $("banner");
  b.textContent = message;
  b.className = "banner" + (kind ? " " + kind : "");
  b.hidden = !message;
}

function age(ms) {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return Math.floor(s) + "s ago";
  if (s < 3600) return Math.floor(s / 60) + "m ago";
  if (s < 86400) return Math.floor(s / 3600) + "h ago";
  if (s < 86400 * 60) return Math.floor(s / 86400) + "d ago";
  if (s < 86400 * 730) return Math.floor(s / 86400 / 30) + "mo ago";
  return Math.floor(s / 86400 / 365) + "y ago";
}
const when = (ms) => (ms ? new Date(ms).toLocaleString() : "—");
const shortId = (id) => String(id).replace(/-/g, "").slice(-8);

function colorOf(scope) {
  if (!state.colorOf.has(scope)) state.colorOf.set(scope, COLORS[state.colorOf.size % COLORS.length]);
  return state.colorOf.get(scope);
}

// ------------------------------------------------------------------------------------------- the API
class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || "HTTP " + status);
    this.status = status;
    this.body = body || {};
  }
}

async function api(method, path, { body, headers } = {}) {
  const h = { "X-Memcli-UI": "1", Accept: "application/json", ...(headers || {}) };
  if (body !== undefined) h["Content-Type"] = "application/json";
  let r;
  try {
    r = await fetch(path, { method, headers: h, credentials: "same-origin", cache: "no-store",
                            body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, { error: "The memcli server does not answer (stopped, or idle for 30 minutes): " +
                                   "run `memcli ui` again." });
  }
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (!r.ok) {
    const err = new ApiError(r.status, data);
    if (r.status === 401 && path !== "/api/ui/login") showSignin("Your session ended (expired, signed out, or the server restarted).");
    throw err;
  }
  return { data, etag: r.headers.get("ETag") };
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") u.set(k, v);
  return u.toString();
}

// ------------------------------------------------------------------------------------------- sign-in
function showSignin(reason) {
  $("app").hidden = true;
  $("logout").hidden = true;
  $("refresh").hidden = true;
  $("signin").hidden = false;
  $("signin-reason").textContent = reason || "";
}

async function signIn() {
  const params = new URLSearchParams(location.search);
  const code = params.get("code");
  if (code) {
    // The code leaves the address bar (and the history entry) before anything else happens.
    params.delete("code");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
    try {
      await api("POST", "/api/ui/login", { body: { code } });
    } catch (e) {
      showSignin(e instanceof ApiError ? e.message : "The server did not answer.");
      return null;
    }
  }
  const { data } = await api("GET", "/health");
  if (!data || !data.home_id) { showSignin("This page has no session yet."); return null; }
  return data;
}

// ------------------------------------------------------------------------------------------- sidebar
async function loadSidebar() {
  const { data } = await api("GET", "/api/stats/scopes");
  if (state.namespace === null) state.namespace = data.default_namespace;
  const nsList = clear($("namespaces"));
  let current = data.namespaces.find((n) => n.namespace === state.namespace);
  if (!current) { state.namespace = data.default_namespace; current = data.namespaces[0]; }
  for (const ns of data.namespaces) {
    nsList.append(el("li", {}, el("button", {
      type: "button", class: "ns-item" + (ns.namespace === state.namespace ? " selected" : ""),
      "data-ns": ns.namespace, onclick: () => selectNamespace(ns.namespace),
    }, el("span", { class: "name" }, ns.namespace), el("span", { class: "count" }, ns.total))));
  }
  const scopes = clear($("scopes"));
  scopes.append(el("li", {}, el("button", {
    type: "button", class: "scope-item" + (state.scope === null ? " selected" : ""), "data-scope": "",
    onclick: () => selectScope(null),
  }, el("span", { class: "name" }, "all scopes"), el("span", { class: "count" }, current ? current.total : 0))));
  const entries = Object.entries(current ? current.scopes : {});
  // global first, then the agents by count (the server's order)
  entries.sort((a, b) => (a[0] === "global" ? -1 : b[0] === "global" ? 1 : 0));
  for (const [scope, n] of entries) {
    const sw = el("span", { class: "swatch" });
    sw.style.background = colorOf(scope);
    scopes.append(el("li", {}, el("button", {
      type: "button", class: "scope-item" + (state.scope === scope ? " selected" : ""), "data-scope": scope,
      onclick: () => selectScope(scope),
    }, el("span", { class: "name" }, sw, scope), el("span", { class: "count" }, n))));
  }
}

function selectNamespace(ns) {
  state.namespace = ns;
  state.scope = null;
  refreshAll(true);
}

function selectScope(scope) {
  state.scope = scope;
  loadSidebar().catch(report);
  (state.query ? runSearch() : loadList(true)).catch(report);
}

// ------------------------------------------------------------------------------------------- the list
function memoryRow(m) {
  const meta = el("div", { class: "meta-row" },
    el("span", { class: "age", title: when(m.created_at) }, age(m.created_at)),
    el("span", { class: "chip scope" }, m.scope),
    (m.tags || []).map((t) => el("span", { class: "chip tag" }, t)),
    m.project ? el("span", { class: "project", title: "project" }, "▸ " + m.project) : null,
    m.score !== undefined ? el("span", { class: "score", title: "relevance, 0..1" }, m.score.toFixed(3)) : null,
    m.outdated_by ? el("span", { class: "chip outdated", title: "a later memory changed this fact: " + m.outdated_by },
                       "outdated by " + shortId(m.outdated_by)) : null,
    (m.updates || []).length ? el("span", { class: "chip updates", title: "changes " + m.updates.join(", ") },
                                  "updates " + m.updates.map(shortId).join(", ")) : null,
  );
  const li = el("li", {
    class: "mem" + (state.selected && state.selected.memory_id === m.memory_id ? " selected" : ""),
    "data-id": m.memory_id, tabindex: "0",
    onclick: (ev) => { if (!ev.target.closest("details")) openMemory(m.memory_id, m.namespace).catch(report); },
    onkeydown: (ev) => { if (ev.key === "Enter") openMemory(m.memory_id, m.namespace).catch(report); },
  }, el("div", { class: "content" }, m.content), meta);
  if (m.explain) li.append(explainBox(m.explain));
  return li;
}

/** Why a recall result was found, in plain words, from its explain signals (the raw numbers stay beside it). */
function explainWords(ex) {
  const parts = [];
  const words = ex.matched_words || [];
  if (words.length) parts.push(`matched the word${words.length > 1 ? "s" : ""} ${words.join(", ")}`);
  else if (ex.bm25 !== null && ex.bm25 !== undefined) parts.push("matched words of the conversation it came from");
  const sim = ex.similarity;
  if (typeof sim === "number") {
    // calibrated similarity: ~0.2 same topic, 0.9 a paraphrase, 1.0 the same text (embedders/base.py)
    if (sim >= 0.85) parts.push("nearly the same meaning");
    else if (sim >= 0.5) parts.push("close in meaning");
    else if (sim >= 0.25) parts.push("related in meaning");
    else if (!parts.length) parts.push("only loosely related in meaning");
  }
  if (ex.importance > 0) parts.push("marked important");
  if (ex.project > 0) parts.push("from this project");
  const text = parts.join("; ") || "ranked by its signals below";
  return text.charAt(0).toUpperCase() + text.slice(1) + ".";
}

function explainBox(ex) {
  const shown = (v) => (Array.isArray(v) ? v.join(", ") || "—" : typeof v === "number" ? v.toFixed(4) : String(v));
  const rows = Object.entries(ex).filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, shown(v))));
  return el("details", { class: "explain" },
            el("summary", {}, "why this result? ", el("span", { class: "why-plain" }, explainWords(ex))),
            el("table", {}, rows));
}

function renderList(append) {
  const list = $("list");
  if (!append) clear(list);
  const start = append ? list.children.length : 0;
  for (const m of state.items.slice(start)) list.append(memoryRow(m));
  $("list-empty").hidden = state.items.length > 0;
}

async function loadList(reset) {
  if (reset) { state.offset = 0; state.items = []; }
  const { data } = await api("GET", "/api/memories?" + qs({
    namespace: state.namespace, scope: state.scope, limit: PAGE, offset: state.offset,
  }));
  state.items = state.items.concat(data);
  state.offset += data.length;
  $("list-title").textContent = "Newest memories" + (state.scope ? " · " + state.scope : "");
  $("more").hidden = data.length < PAGE;
  renderList(!reset);
}

async function runSearch() {
  const q = state.query;
  const { data } = await api("GET", "/api/search?" + qs({
    q, namespace: state.namespace, scope: state.scope, limit: 20, explain: 1,
  }));
  if (q !== state.query) return; // a newer search has started
  state.items = data;
  $("list-title").textContent = `Search results for “${q}”` + (state.scope ? " · " + state.scope : "");
  $("more").hidden = true;
  $("clear-search").hidden = false;
  renderList(false);
}

// ------------------------------------------------------------------------------------------- the chart
async function loadChart() {
  const days = 30;
  const { data } = await api("GET", "/api/stats/daily?" + qs({
    days, namespace: state.namespace, tz_offset: -new Date().getTimezoneOffset(),
  }));
  drawChart(data);
}

function drawChart(data) {
  lastChart = data;
  // drawn at the box's own width: text and bars keep their proportions
  const W = Math.max(300, Math.round($("chart").clientWidth) || 600), H = 150, L = 28, B = 18, T = 6;
  const n = data.days.length;
  const totals = data.days.map((_, i) => data.series.reduce((s, x) => s + x.counts[i], 0));
  const max = Math.max(1, ...totals);
  const bw = (W - L) / n;
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
                          "aria-label": "memories per day per agent" });
  for (const v of [0, Math.ceil(max / 2), max]) {
    svg.append(el("line", { class: "grid", x1: L, x2: W, y1: y(v), y2: y(v) }));
    svg.append(el("text", { class: "axis", x: L - 4, y: y(v) + 3, "text-anchor": "end" }, v));
  }
  for (let i = 0; i < n; i++) {
    let acc = 0;
    for (const s of data.series) {
      const c = s.counts[i];
      if (!c) continue;
      const r = el("rect", { x: L + i * bw + 1, width: Math.max(1, bw - 2), y: y(acc + c), height: y(acc) - y(acc + c),
                             fill: colorOf(s.scope), "data-scope": s.scope, "data-day": data.days[i] },
                   el("title", {}, `${data.days[i]} · ${s.scope}: ${c}`));
      svg.append(r);
      acc += c;
    }
    if ((n - 1 - i) % 7 === 0) {  // a label a week, the last one on today
      const last = i === n - 1;
      svg.append(el("text", { class: "axis", x: last ? W : L + i * bw + bw / 2, y: H - 4,
                              "text-anchor": last ? "end" : "middle" }, data.days[i].slice(5)));
    }
  }
  clear($("chart")).append(svg);
  const legend = clear($("legend"));
  for (const s of data.series) {
    const sw = el("span", { class: "swatch" });
    sw.style.background = colorOf(s.scope);
    legend.append(el("li", { "data-scope": s.scope }, sw, `${s.scope} (${s.total})`));
  }
  if (!data.series.length) legend.append(el("li", {}, "nothing written in these days"));
  $("chart-range").textContent = `last ${n} days · ${data.total} memories`;
}

// ------------------------------------------------------------------------------------------- one memory
/** The route of one memory, in its namespace (an id is looked up in one namespace only); without one, the
 * owner's view looks in every namespace (a distill run's ids). A space token stays in its space either way. */
function memoryPath(id, ns, suffix = "") {
  const where = ns ? { namespace: ns } : { all_namespaces: "true" };
  return "/api/memories/" + encodeURIComponent(id) + suffix + "?" + qs(where);
}

async function openMemory(id, ns) {
  const { data } = await api("GET", memoryPath(id, ns));
  showMemory(data);
  for (const li of document.querySelectorAll(".mem")) li.classList.toggle("selected", li.dataset.id === data.memory_id);
  reveal($("detail")); // every caller is a click on a memory: its editor is what the person wants to see
}

function showMemory(m) {
  state.selected = m;
  $("detail").hidden = false;
  $("d-conflict").hidden = true;
  $("d-confirm").hidden = true;
  $("d-history").hidden = true;
  $("d-id").textContent = shortId(m.memory_id);
  $("d-id").title = m.memory_id;
  $("d-content").value = m.content;
  $("d-tags").value = (m.tags || []).join(", ");
  $("d-importance").value = m.importance;
  $("d-save").disabled = true;
  $("d-save").textContent = "Save";
  message("");
  const meta = clear($("d-meta"));
  const rows = [["id", m.memory_id], ["namespace", m.namespace], ["scope", m.scope], ["project", m.project],
                ["source", m.source], ["version", m.version], ["created", when(m.created_at)],
                ["updated", when(m.updated_at)], ["expires", m.expires_at ? when(m.expires_at) : "never"],
                ["key", m.key], ["metadata", m.metadata && Object.keys(m.metadata).length ? JSON.stringify(m.metadata) : null],
                ["outdated by", m.outdated_by], ["updates", (m.updates || []).join(", ") || null]];
  for (const [k, v] of rows) {
    if (v === null || v === undefined || v === "") continue;
    meta.append(el("dt", {}, k), el("dd", { "data-field": k }, v));
  }
}

function message(text, kind) {
  const p = $("d-msg");
  p.textContent = text;
  p.className = "msg" + (kind ? " " + kind : "");
}

function editedFields() {
  const m = state.selected;
  const out = {};
  const content = $("d-content").value;
  if (content !== m.content) out.content = content;
  const tags = $("d-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
  if (JSON.stringify(tags) !== JSON.stringify(m.tags || [])) out.tags = tags;
  const imp = $("d-importance").value;
  if (imp !== "" && Number(imp) !== m.importance) out.importance = Number(imp);
  return out;
}

function onEdit() { if (state.selected) $("d-save").disabled = Object.keys(editedFields()).length === 0; }

async function save(version) {
  const m = state.selected;
  const fields = editedFields();
  if (!Object.keys(fields).length) return;
  $("d-save").disabled = true;
  try {
    const { data } = await api("PATCH", memoryPath(m.memory_id, m.namespace),
                               { body: fields, headers: { "If-Match": `"${version}"` } });
    showMemory(data);
    message(`Saved (version ${data.version}).`, "ok");
    replaceInList(data);
    loadSidebar().catch(report);
  } catch (e) {
    if (e instanceof ApiError && e.status === 412) return showConflict(version);
    $("d-save").disabled = false;
    message(e instanceof ApiError ? e.message : "The save failed: " + e, "error");
  }
}

async function showConflict(editedVersion) {
  const { data } = await api("GET", memoryPath(state.selected.memory_id, state.selected.namespace));
  state.conflict = data;
  $("d-conflict-text").textContent = `You edited version ${editedVersion}; the stored memory is now version ` +
    `${data.version} (changed ${age(data.updated_at)}). Nothing was saved.`;
  $("d-conflict-current").textContent = data.content;
  $("d-conflict").hidden = false;
  $("d-save").disabled = false;
  message("Not saved: version conflict.", "error");
}

function replaceInList(m) {
  const i = state.items.findIndex((x) => x.memory_id === m.memory_id);
  if (i < 0) return;
  state.items[i] = { ...state.items[i], ...m };
  const old = document.querySelector(`.mem[data-id="${CSS.escape(m.memory_id)}"]`);
  if (old) old.replaceWith(memoryRow(state.items[i]));
}

async function forget() {
  const m = state.selected;
  $("d-confirm").hidden = true;
  try {
    await api("DELETE", memoryPath(m.memory_id, m.namespace));
  } catch (e) {
    message(e instanceof ApiError ? e.message : String(e), "error");
    return;
  }
  state.items = state.items.filter((x) => x.memory_id !== m.memory_id);
  const li = document.querySelector(`.mem[data-id="${CSS.escape(m.memory_id)}"]`);
  if (li) li.remove();
  $("list-empty").hidden = state.items.length > 0;
  $("detail").hidden = true;
  state.selected = null;
  banner("Forgotten: " + shortId(m.memory_id));
  loadSidebar().catch(report);
  loadChart().catch(report);
}

async function showHistory() {
  const m = state.selected;
  const { data } = await api("GET", memoryPath(m.memory_id, m.namespace, "/history"));
  const ol = clear($("d-history"));
  for (const e of data) {
    const changed = Object.keys(e.changes || {}).join(", ");
    ol.append(el("li", {}, `${when(e.at)} · ${e.action} by ${e.actor} · v${e.version}` +
                 (changed ? ` · ${changed}` : "") + (e.note ? ` · ${e.note}` : "")));
  }
  if (!data.length) ol.append(el("li", {}, "no recorded changes"));
  ol.hidden = false;
}

// ------------------------------------------------------------------------------------------- wiring
function report(e) {
  if (e instanceof ApiError && e.status === 401) return;
  banner(e instanceof ApiError ? `${e.message}` : String(e), "error");
}

function refreshAll(namespaceChanged) {
  if (typeof boardRefresh === "function") boardRefresh(namespaceChanged === true); // board.js
  loadSidebar()
    .then(() => Promise.all([state.query ? runSearch() : loadList(true), loadChart()]))
    .catch(report);
}

let lastChart = null;
let resizeTimer = 0;

function wire() {
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { if (lastChart) drawChart(lastChart); }, 150);
  });
  $("search-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.query = $("q").value.trim();
    banner("");
    if (state.query) runSearch().then(() => reveal($("list-title").parentElement)).catch(report);
    else clearSearch();
  });
  $("clear-search").addEventListener("click", clearSearch);
  $("more").addEventListener("click", () => loadList(false).catch(report));
  $("refresh").addEventListener("click", refreshAll);
  $("logout").addEventListener("click", async () => {
    await api("POST", "/api/ui/logout", { body: {} }).catch(() => null);
    showSignin("Signed out.");
  });
  for (const id of ["d-content", "d-tags", "d-importance"]) $(id).addEventListener("input", onEdit);
  $("d-save").addEventListener("click", () => save(state.selected.version).catch(report));
  $("d-close").addEventListener("click", () => { $("detail").hidden = true; state.selected = null; });
  $("d-forget").addEventListener("click", () => { $("d-confirm").hidden = false; });
  $("d-confirm-no").addEventListener("click", () => { $("d-confirm").hidden = true; });
  $("d-confirm-yes").addEventListener("click", () => forget().catch(report));
  $("d-history-btn").addEventListener("click", () => showHistory().catch(report));
  $("d-reload").addEventListener("click", () => { showMemory(state.conflict); replaceInList(state.conflict); });
  $("d-overwrite").addEventListener("click", () => {
    // mine over theirs: what the form holds, compared with (and checked against) the version now stored
    $("d-conflict").hidden = true;
    state.selected = state.conflict;
    if (!Object.keys(editedFields()).length) return message("Nothing to save: the stored version already says this.");
    save(state.conflict.version).catch(report);
  });
}

function clearSearch() {
  state.query = "";
  $("q").value = "";
  $("clear-search").hidden = true;
  loadList(true).catch(report);
}

async function main() {
  wire();
  let health;
  try {
    health = await signIn();
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) showSignin("The memcli server did not answer.");
    return;
  }
  if (!health) return;
  $("signin").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  $("refresh").hidden = false;
  $("server-info").textContent = `memcli ${health.version} · ${health.home}`;
  await loadSidebar().catch(report);
  await Promise.all([loadList(true), loadChart(), loadDistillTags()]).catch(report);
  document.body.dataset.ready = "1"; // for tests and scripts: the first render is complete
}

document.addEventListener("DOMContentLoaded", main);
