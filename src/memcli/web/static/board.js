// memcli web view: the task board (GET /api/board and /api/board/tasks/…), for the namespace of the sidebar.
//
// Loaded after app.js and built on its helpers ($, el, clear, reveal, api, qs, ApiError, report, openMemory, when, age).
// Card text is data like memory text: it reaches the page only through textContent and attribute values.
"use strict";

const board = { view: "memories", data: null, card: null, poll: 0 };

const boardNs = () => state.namespace || "";
const taskPath = (id, rest) => `/api/board/tasks/${encodeURIComponent(id)}${rest || ""}?` + qs({ namespace: boardNs() });

function boardMsg(id, text, kind) {
  const p = $(id);
  clear(p);
  if (Array.isArray(text)) p.append(...text); else p.textContent = text || "";
  p.className = "msg" + (kind ? " " + kind : "");
}

// ------------------------------------------------------------------------------------------- the view switch
function showView(view) {
  board.view = view;
  document.body.dataset.view = view; // the stylesheet gives the board the side panel's width when it needs it
  const onBoard = view === "board";
  $("board-view").hidden = !onBoard;
  $("memory-view").hidden = onBoard;
  for (const [id, on] of [["tab-memories", !onBoard], ["tab-board", onBoard]]) {
    $(id).classList.toggle("selected", on);
    $(id).setAttribute("aria-selected", String(on));
  }
  if (onBoard) loadBoard().catch(report);
  else if (lastChart) drawChart(lastChart); // the chart box had no width while hidden
}

/** Called by app.js when the namespace or the data may have changed. */
function boardRefresh(namespaceChanged) {
  if (namespaceChanged) closeCard();
  if (board.view === "board") loadBoard().catch(report);
}

// ------------------------------------------------------------------------------------------- the columns
async function loadBoard() {
  const ns = boardNs();
  const { data } = await api("GET", "/api/board?" + qs({ namespace: ns }));
  if (ns !== boardNs()) return; // the namespace changed meanwhile
  board.data = data;
  $("board-ns").textContent = `${data.namespace} · ${data.total} card${data.total === 1 ? "" : "s"}`;
  const cols = clear($("board-cols"));
  const columns = data.columns.slice();
  if (data.other && data.other.length) columns.push({ status: "other", tasks: data.other, other: true });
  for (const col of columns) {
    cols.append(el("section", { class: "board-col" + (col.other ? " other" : ""), "data-status": col.status },
      el("h3", {}, el("span", {}, col.status), el("span", { class: "count" }, col.tasks.length)),
      el("ul", { class: "board-list" }, col.tasks.map(cardItem))));
  }
  if (board.card) markSelected(board.card.task_id);
  document.body.dataset.board = String(Date.now()); // for tests: a board render has completed
}

function jobChip(job) {
  if (!job) return null;
  return el("span", { class: "chip job job-" + job.status, title: job.error || `exit code ${job.exit_code ?? "—"}` },
            `${job.job}: ${job.status}`);
}

function cardItem(t) {
  const open = () => openCard(t.task_id).then(() => reveal($("card-detail"))).catch(report);
  return el("li", { class: "board-card", "data-id": t.task_id, tabindex: "0", onclick: open,
                    onkeydown: (ev) => { if (ev.key === "Enter") open(); } },
    el("div", { class: "bc-head" }, el("code", { class: "bc-id" }, t.task_id), el("span", { class: "bc-title" }, t.title)),
    el("div", { class: "meta-row" },
      t.assignee ? el("span", { class: "chip scope bc-assignee", title: "assignee" }, t.assignee) : null,
      (t.labels || []).map((l) => el("span", { class: "chip tag" }, l)),
      jobChip(t.job)));
}

function markSelected(id) {
  for (const li of document.querySelectorAll(".board-card")) li.classList.toggle("selected", li.dataset.id === id);
}

// ------------------------------------------------------------------------------------------- one card
async function openCard(id, { keepMessages } = {}) {
  const { data } = await api("GET", taskPath(id));
  showCard(data, keepMessages);
  return data;
}

function showCard(t, keepMessages) {
  board.card = t;
  $("card-detail").hidden = false;
  if (!keepMessages) { $("c-conflict").hidden = true; boardMsg("c-msg", ""); }
  $("c-id").textContent = t.task_id;
  $("c-status").textContent = `${t.status} · v${t.version}`;
  $("c-title").textContent = t.title;
  clear($("c-chips")).append(
    t.assignee ? el("span", { class: "chip scope", title: "assignee" }, t.assignee) : el("span", { class: "muted" }, "unassigned"),
    ...(t.labels || []).map((l) => el("span", { class: "chip tag" }, l)));
  $("c-desc").textContent = t.description || "";
  $("c-desc").hidden = !t.description;
  const columns = board.data ? board.data.columns.map((c) => c.status) : [];
  const to = clear($("c-to"));
  for (const c of columns) if (c !== t.status) to.append(el("option", { value: c }, c));
  const next = columns[columns.indexOf(t.status) + 1];
  if (next) to.value = next; // forward one column is the usual move
  $("c-reason").value = "";
  const jobs = (board.data && board.data.jobs) || [];
  const sel = clear($("c-job"));
  for (const j of jobs) sel.append(el("option", { value: j }, j));
  $("c-jobs").hidden = jobs.length === 0;
  showRun((t.jobs || []).at(-1));
  const mems = clear($("c-mems"));
  for (const m of t.memories || []) {
    mems.append(el("li", { "data-id": m.memory_id },
      el("button", { type: "button", class: "link", title: m.memory_id,
                     onclick: () => openMemory(m.memory_id, m.namespace).catch(report) }, shortId(m.memory_id)),
      el("span", { class: "c-mem-text" }, m.content),
      el("span", { class: "muted" }, ` · ${m.scope} · ${age(m.created_at)}`)));
  }
  for (const mid of t.missing_memory_ids || []) mems.append(el("li", { class: "muted" }, `${shortId(mid)} (gone)`));
  $("c-mem-count").textContent = String((t.memories || []).length);
  if (!mems.children.length) mems.append(el("li", { class: "muted" }, "no linked memories"));
  const meta = clear($("c-meta"));
  for (const [k, v] of [["namespace", t.namespace], ["created by", t.created_by], ["created", when(t.created_at)],
                        ["updated", when(t.updated_at)]]) {
    if (v) meta.append(el("dt", {}, k), el("dd", {}, v));
  }
  markSelected(t.task_id);
}

function showRun(run) {
  const box = clear($("c-run-info"));
  if (!run) { box.textContent = "none"; box.className = "muted"; return; }
  box.className = "run";
  box.append(el("div", {}, jobChip(run), ` started ${when(run.started_at)}`,
                run.exit_code !== null && run.exit_code !== undefined ? ` · exit ${run.exit_code}` : "",
                run.error ? ` · ${run.error}` : ""));
  if (run.log_tail) box.append(el("pre", { class: "log" }, run.log_tail));
}

function closeCard() {
  board.card = null;
  clearTimeout(board.poll);
  $("card-detail").hidden = true;
  markSelected(null);
}

async function moveCard() {
  const t = board.card;
  const target = $("c-to").value;
  const reason = $("c-reason").value.trim();
  if (!target || $("c-move").disabled) return; // one move at a time (Enter in the reason, a double click)
  $("c-move").disabled = true;
  try {
    const { data } = await api("POST", taskPath(t.task_id, "/move"),
                               { body: { to_status: target, reason: reason || undefined, expected_version: t.version } });
    // the move's answer is the card alone: its memories (the move's own among them) and job runs come with
    // the card's detail, read again so that the panel keeps showing them
    const [, detail] = await Promise.all([loadBoard(), api("GET", taskPath(t.task_id)).catch(() => null)]);
    showCard(detail ? detail.data : { ...t, ...data.task, memories: t.memories, jobs: t.jobs });
    const note = [`Moved ${data.task_id} ${data.from} → ${data.to}`];
    if (data.memory_id) {
      note.push(" (recorded as memory ", el("button", { type: "button", class: "link", title: data.memory_id,
        "data-memory": data.memory_id,
        onclick: () => openMemory(data.memory_id, data.task && data.task.namespace).catch(report) },
        shortId(data.memory_id)), ")");
    }
    boardMsg("c-msg", note.concat(data.warning ? [". ", data.warning] : ["."]), data.warning ? "error" : "ok");
    // the move's memory belongs in the memory view too
    loadSidebar().then(() => (state.query ? runSearch() : loadList(true))).catch(report);
  } catch (e) {
    if (e instanceof ApiError && e.status === 412) return showCardConflict(t, e);
    if (e instanceof ApiError && e.status === 404) { await loadBoard().catch(report); }
    boardMsg("c-msg", e instanceof ApiError ? `Not moved: ${e.message}` : "The move failed: " + e, "error");
  } finally {
    $("c-move").disabled = false;
  }
}

async function showCardConflict(stale, err) {
  const fresh = await openCard(stale.task_id);
  $("c-conflict-text").textContent = `You opened version ${stale.version} (in ${stale.status}); it is now ` +
    `version ${fresh.version}, in ${fresh.status}, changed ${age(fresh.updated_at)}. ${err.message}`;
  $("c-conflict").hidden = false;
  boardMsg("c-msg", "Not moved: version conflict.", "error");
  loadBoard().catch(report);
}

async function runJob() {
  const t = board.card;
  const job = $("c-job").value;
  if (!job) return;
  try {
    const { data } = await api("POST", taskPath(t.task_id, `/jobs/${encodeURIComponent(job)}`), { body: {} });
    boardMsg("c-msg", `Started job ${job} (run ${shortId(data.run.run_id)}).`, "ok");
    showRun(data.run);
    pollRun(t.task_id, 0);
  } catch (e) {
    boardMsg("c-msg", e instanceof ApiError ? `Job not started: ${e.message}` : String(e), "error");
  }
}

/** While the card's latest run is running: look again every 1.5 s (for 2 minutes at most). */
function pollRun(id, n) {
  clearTimeout(board.poll);
  board.poll = setTimeout(async () => {
    if (!board.card || board.card.task_id !== id) return;
    const { data } = await api("GET", taskPath(id)).catch(() => ({ data: null }));
    if (!data || !board.card || board.card.task_id !== id) return;
    board.card = data;
    const run = (data.jobs || []).at(-1);
    showRun(run);
    if (run && run.status === "running" && n < 80) pollRun(id, n + 1);
    else loadBoard().catch(report);
  }, 1500);
}

// ------------------------------------------------------------------------------------------- a new card
async function createCard() {
  const labels = $("nc-labels").value.split(",").map((l) => l.trim()).filter(Boolean);
  const body = { title: $("nc-title").value, namespace: boardNs() || undefined };
  if ($("nc-desc").value.trim()) body.description = $("nc-desc").value;
  if ($("nc-assignee").value.trim()) body.assignee = $("nc-assignee").value.trim();
  if (labels.length) body.labels = labels;
  try {
    const { data } = await api("POST", "/api/board/tasks", { body });
    for (const id of ["nc-title", "nc-desc", "nc-assignee", "nc-labels"]) $(id).value = "";
    $("new-card").hidden = true;
    boardMsg("nc-msg", "");
    // created, whatever the reload says
    await loadBoard().then(() => openCard(data.task_id)).then(() => reveal($("card-detail"))).catch(report);
    boardMsg("board-msg", `Created ${data.task_id}.`, "ok"); // last: the message means the card is on screen
  } catch (e) {
    boardMsg("nc-msg", e instanceof ApiError ? `Not created: ${e.message}` : String(e), "error");
  }
}

function wireBoard() {
  $("tab-memories").addEventListener("click", () => showView("memories"));
  $("tab-board").addEventListener("click", () => showView("board"));
  $("board-reload").addEventListener("click", () => loadBoard().catch(report));
  $("board-new").addEventListener("click", () => { $("new-card").hidden = false; $("nc-title").focus(); });
  $("nc-cancel").addEventListener("click", () => { $("new-card").hidden = true; boardMsg("nc-msg", ""); });
  $("new-card").addEventListener("submit", (ev) => { ev.preventDefault(); createCard(); });
  $("c-close").addEventListener("click", closeCard);
  $("c-move").addEventListener("click", () => moveCard());
  $("c-reason").addEventListener("keydown", (ev) => { if (ev.key === "Enter") moveCard(); });
  $("c-run").addEventListener("click", () => runJob());
}

document.addEventListener("DOMContentLoaded", wireBoard);
