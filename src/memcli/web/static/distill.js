// memcli web view: the distill panel (plan, apply, undo with a preview), for the namespace of the sidebar.
//
// Loaded after app.js and built on its helpers ($, el, clear, api, ApiError, report, openMemory, refreshAll,
// state, shortId, age, when). Memory text is data: it reaches the page only through textContent.
"use strict";

// Contract (src/memcli/server/distill_routes.py): GET /api/distill/plan, POST /api/distill/apply,
// POST /api/distill/undo {tag, dry_run}, GET /api/distill/tags.
function distillUnavailable() {
  state.distillAvailable = false;
  $("distill-status").textContent = "distill not available on this server";
  $("distill-plan").disabled = true;
  $("distill-apply").hidden = true;
  $("distill-undo").hidden = true;
}

function tagName(t) { return typeof t === "string" ? t : (t && (t.tag || t.name)) || JSON.stringify(t); }

async function loadDistillTags() {
  let data;
  try {
    ({ data } = await api("GET", "/api/distill/tags"));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return distillUnavailable();
    throw e;
  }
  state.distillAvailable = true;
  const tags = Array.isArray(data) ? data : (data && (data.tags || data.items)) || [];
  const sel = clear($("distill-tags"));
  for (const t of tags) sel.append(el("option", { value: tagName(t) }, tagName(t)));
  $("distill-undo").hidden = tags.length === 0;
}

function idButton(id) {
  return el("button", { type: "button", class: "link", title: id, onclick: () => openMemory(id).catch(report) },
            shortId(id));
}

/** One memory of the plan: its id (opens it), who wrote it, when, and its text (as the plan read it). */
function planMemory(id, { role, author, note } = {}) {
  const m = (state.plan && state.plan.memories && state.plan.memories[id]) || {};
  return el("div", { class: "pm", "data-id": id },
    el("div", { class: "pm-head" },
      role ? el("span", { class: "pm-role" }, role) : null, idButton(id),
      author || m.scope ? el("span", { class: "chip scope" }, author || m.scope) : null,
      m.created_at ? el("span", { class: "muted", title: when(m.created_at) }, age(m.created_at)) : null,
      m.namespace && m.namespace !== state.namespace ? el("span", { class: "muted" }, m.namespace) : null),
    el("div", { class: "pm-text" }, m.content === undefined ? "(text not in the plan)" : m.content),
    note ? el("div", { class: "pm-why" }, note) : null);
}

function mergeGroup(g) {
  const keep = (state.plan.memories || {})[g.keep] || {};
  return el("li", { class: "merge-group", "data-keep": g.keep },
    planMemory(g.keep, { role: "keep" }),
    (g.merge || []).map((id) => planMemory(id, { role: "merge", note: g.why && g.why[id] ? "why: " + g.why[id] : null })),
    g.content && g.content !== keep.content ? el("div", { class: "merge-content" }, "merged text: ", g.content) : null,
    el("div", { class: "muted pm-foot" }, [g.scope ? "becomes " + g.scope : null,
      typeof g.similarity === "number" ? "similarity " + g.similarity.toFixed(3) : null].filter(Boolean).join(" · ")));
}

function conflictItem(c) {
  const ids = c.ids || [];
  const mems = (state.plan && state.plan.memories) || {};
  // newest first (the contract's order; sorted again so the page never depends on it)
  const order = ids.map((id, i) => ({ id, author: (c.authors || [])[i], at: (mems[id] || {}).created_at || 0 }))
    .sort((a, b) => b.at - a.at);
  const diffs = (c.differences || []).map(([a, b]) => `${a} ↔ ${b}`).join("; ");
  return el("li", { class: "conflict-item", "data-ids": order.map((o) => o.id).join(" ") },
    el("div", { class: "pm-why" }, (c.reason || "different values") + (diffs ? ": " + diffs : "")),
    order.map((o, i) => planMemory(o.id, { role: i === 0 ? "newer" : "older", author: o.author })));
}

const PLAN_SHOWN = 25; // items a section shows at first; the rest behind a button (a large home lists hundreds)

/** A section's list: the first PLAN_SHOWN items, and a button that shows the rest. */
function planList(cls, items, render) {
  const ul = el("ul", { class: "plan-list " + cls }, items.slice(0, PLAN_SHOWN).map(render));
  if (items.length <= PLAN_SHOWN) return ul;
  const more = el("button", { type: "button", class: "ghost plan-more", onclick: () => {
    more.remove();
    ul.append(...items.slice(PLAN_SHOWN).map(render));
  } }, `Show all ${items.length}`);
  return el("div", {}, ul, more);
}

async function showPlan() {
  let data;
  try {
    ({ data } = await api("GET", "/api/distill/plan?namespace=" + encodeURIComponent(state.namespace || "")));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return distillUnavailable();
    throw e;
  }
  const plan = (data && data.plan) || {};
  const counts = (data && data.counts) || {};
  state.plan = plan;
  $("distill-undo-confirm").hidden = true;
  const out = clear($("distill-out"));
  out.append(el("p", { class: "counts" }, Object.entries(counts).map(([k, v]) => `${k}: ${v}`).join(" · ") || "—"));
  const archive = plan.archive || [], merge = plan.merge || [], promote = plan.promote || [];
  const conflicts = plan.conflicts || [];
  const ids = (xs) => xs.map((x) => (typeof x === "string" ? x : x.memory_id || x.id));
  const reasons = plan.reasons || {};
  if (archive.length) {
    out.append(el("h3", {}, `Archive (${archive.length})`),
               planList("archive", ids(archive), (id) => el("li", {}, planMemory(id, { note: "expired" }))));
  }
  if (merge.length) out.append(el("h3", {}, `Merge (${merge.length})`), planList("merges", merge, mergeGroup));
  if (promote.length) {
    out.append(el("h3", {}, `Promote to global (${promote.length})`),
               planList("promotions", ids(promote), (id) => el("li", {},
                 planMemory(id, { note: reasons[id] ? "why: " + reasons[id] : null }))));
  }
  if (conflicts.length) {
    out.append(el("h3", { class: "conflicts-h" }, `Conflicts (${conflicts.length})`),
               el("p", { class: "muted" }, "The same subject with different values. Never merged: check which " +
                                           "is true, then edit or forget the other."),
               planList("conflicts", conflicts, conflictItem));
  }
  const empty = !archive.length && !merge.length && !promote.length;
  if (empty && !conflicts.length) out.append(el("p", { class: "muted" }, "Nothing to do: the memory is already distilled."));
  else if (empty) out.append(el("p", { class: "muted" }, "Nothing to merge, promote or archive."));
  $("distill-apply").hidden = empty;
}

async function applyPlan() {
  $("distill-confirm").hidden = true;
  const { data } = await api("POST", "/api/distill/apply", { body: state.namespace ? { namespace: state.namespace } : {} });
  const counts = Object.entries(data.counts || {}).map(([k, v]) => `${k}: ${v}`).join(" · ");
  clear($("distill-out")).append(el("p", { class: "msg ok" }, `Applied (tag ${data.tag})${counts ? ": " + counts : ""}.`));
  $("distill-apply").hidden = true;
  await loadDistillTags();
  refreshAll();
}

/** A field's value in the undo preview: ids short, lists joined, nothing as a dash. */
function undoValue(v) {
  if (typeof v === "string" && v.startsWith("[")) {
    try { v = JSON.parse(v); } catch (_) { /* a text that starts with "[" */ }
  }
  if (v === null || v === undefined || (Array.isArray(v) && !v.length)) return "—";
  if (Array.isArray(v)) return v.map(undoValue).join(", ");
  if (typeof v === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(v)) return shortId(v);
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** Undo, step one: ask the server what undoing the chosen run would change (dry run) and show it. */
async function previewUndo() {
  const tag = $("distill-tags").value;
  const { data } = await api("POST", "/api/distill/undo", { body: tag ? { tag, dry_run: true } : { dry_run: true } });
  state.undoTag = data.restored || tag;
  const changes = data.changes || [], kept = data.kept || [], gone = data.gone || [];
  const texts = {};
  // the texts of the memories that change (a few requests; a memory that cannot be read shows its id only)
  await Promise.all(changes.slice(0, 30).map((c) => api("GET", memoryPath(c.memory_id, c.namespace))
    .then(({ data: m }) => { texts[c.memory_id] = m.content; }).catch(() => null)));
  const n = changes.length;
  $("distill-undo-summary").textContent = n
    ? `Undo ${state.undoTag}? ${n} ${n === 1 ? "memory goes" : "memories go"} back to what ${n === 1 ? "it was" : "they were"} ` +
      "before that run. Memories written after it, in any namespace, stay as they are."
    : `Undo ${state.undoTag}? Nothing would change: every memory it touched was written again since.`;
  const list = clear($("distill-undo-list"));
  for (const c of changes) {
    list.append(el("li", { class: "undo-change", "data-id": c.memory_id },
      el("div", { class: "pm-head" }, idButton(c.memory_id), c.namespace ? el("span", { class: "muted" }, c.namespace) : null),
      texts[c.memory_id] !== undefined ? el("div", { class: "pm-text" }, texts[c.memory_id]) : null,
      el("ul", { class: "fields" }, Object.entries(c.changes || {}).map(([f, [now, back]]) =>
        el("li", { "data-field": f }, `${f}: ${undoValue(now)} → ${undoValue(back)}`)))));
  }
  for (const k of kept) {
    list.append(el("li", { class: "undo-kept", "data-id": k.memory_id }, idButton(k.memory_id),
      ` keeps its later edit of ${(k.fields || []).join(", ")} (version ${k.version}): written after the run, not undone`));
  }
  for (const id of gone) {
    list.append(el("li", { class: "undo-gone", "data-id": id }, idButton(id), " was forgotten since the run: it stays forgotten"));
  }
  $("distill-undo-yes").disabled = n === 0;
  $("distill-undo-confirm").hidden = false;
}

/** Undo, step two (after the confirmation): undo exactly the run that was previewed. */
async function undo() {
  const tag = state.undoTag;
  $("distill-undo-confirm").hidden = true;
  const { data } = await api("POST", "/api/distill/undo", { body: tag ? { tag } : {} });
  const kept = (data.kept || []).length;
  clear($("distill-out")).append(el("p", { class: "msg ok" },
    `Restored the state before ${data.restored}: ${data.changed ?? (data.changes || []).length} changed back` +
    (kept ? `, ${kept} kept ${kept === 1 ? "its" : "their"} later edits` : "") + "."));
  await loadDistillTags();
  refreshAll();
}

function wireDistill() {
  $("distill-plan").addEventListener("click", () => showPlan().catch(report));
  $("distill-apply").addEventListener("click", () => { $("distill-confirm").hidden = false; });
  $("distill-confirm-no").addEventListener("click", () => { $("distill-confirm").hidden = true; });
  $("distill-confirm-yes").addEventListener("click", () => applyPlan().catch(report));
  $("distill-undo-btn").addEventListener("click", () => previewUndo().catch(report));
  $("distill-undo-no").addEventListener("click", () => { $("distill-undo-confirm").hidden = true; });
  $("distill-undo-yes").addEventListener("click", () => undo().catch(report));
}

document.addEventListener("DOMContentLoaded", wireDistill);
