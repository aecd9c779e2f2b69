// legalir serve: the page. Plain JavaScript over the JSON API, no dependencies, no build step.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { indexes: [], runs: [], topics: [], shown: [], topicPos: -1, lastQuery: "", grades: null,
                measureNames: {}, restoring: false };

// ---------------------------------------------------------------- helpers
function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

// The server folds words the same way (legalir.serve.engine.norm_term).
function normTerm(w) {
  w = w.toLowerCase();
  for (const suf of ["ing", "ed", "es", "s", "ly"]) {
    if (w.length > suf.length + 3 && w.endsWith(suf)) return w.slice(0, -suf.length);
  }
  return w;
}

// Escape `text` and wrap the words whose folded form is one of `terms` in <mark>.
function highlight(text, terms) {
  const wanted = new Set(terms || []);
  if (!wanted.size) return esc(text);
  let out = "", last = 0;
  for (const m of String(text ?? "").matchAll(/[\p{L}\p{N}]+/gu)) {
    out += esc(text.slice(last, m.index));
    out += wanted.has(normTerm(m[0])) ? `<mark>${esc(m[0])}</mark>` : esc(m[0]);
    last = m.index + m[0].length;
  }
  return out + esc(String(text ?? "").slice(last));
}

// A server started with --api-keys answers 401 without `Authorization: Bearer KEY`: ask once, keep the key
// for this tab (sessionStorage), send it with every request.
const KEY = "legalir-api-key";
let asking = null;
function askKey() {
  if (!asking) {
    asking = Promise.resolve().then(() => {
      const k = window.prompt("This server needs an API key (Authorization: Bearer). Key:");
      if (k && k.trim()) sessionStorage.setItem(KEY, k.trim());
      asking = null;
      return Boolean(k && k.trim());
    });
  }
  return asking;
}

async function api(path, options, retried) {
  const key = sessionStorage.getItem(KEY);
  const opts = { ...(options || {}), headers: { ...((options || {}).headers || {}), ...(key ? { Authorization: `Bearer ${key}` } : {}) } };
  const res = await fetch(path, opts);
  if (res.status === 401 && !retried && await askKey()) return api(path, options, true);
  let body;
  try { body = await res.json(); } catch (e) { body = { error: `${res.status} ${res.statusText}` }; }
  if (!res.ok) throw new Error(body.error || `${res.status} ${res.statusText}`);
  return body;
}

function fmt(v) { return typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(4)) : esc(v ?? "–"); }

// The dataset's words for a grade where it has them (ACORD: stars), else the grade.
function gradeWord(label) {
  const w = state.grades && state.grades[String(label)];
  return w ? w : (label > 0 ? "relevant " + label : "0 not relevant");
}
function labelBadge(label, judged) {
  if (label === null || label === undefined || judged === false) return `<span class="label l-unjudged">unjudged</span>`;
  return `<span class="label l-${Math.max(0, Math.min(6, label))}">${esc(gradeWord(label))}</span>`;
}
function measureName(k) { return state.measureNames[k] || k; }

function showError(where, err) { where.innerHTML = `<div class="error">${esc(err.message || err)}</div>`; }

// ---------------------------------------------------------------- tabs
function showPanel(id) {
  document.querySelectorAll(".panel").forEach((p) => p.classList.toggle("hidden", p.id !== id));
  document.querySelectorAll("button.tab").forEach((t) => t.classList.toggle("active", t.dataset.panel === id));
}
document.querySelectorAll("button.tab").forEach((t) => t.addEventListener("click", () => showPanel(t.dataset.panel)));

// ---------------------------------------------------------------- search
function currentIndex() { return state.indexes.find((i) => i.name === $("#index").value); }

function fillIndexControls() {
  const idx = currentIndex();
  const method = $("#method"), part = $("#partition");
  method.innerHTML = idx ? idx.methods.map((m) => `<option>${esc(m)}</option>`).join("") : "";
  part.innerHTML = idx && idx.partitioned ? idx.partitions.map((p) => `<option value="${esc(p)}">${esc(p.replace(/_/g, " "))}</option>`).join("") : "";
  $("#partition-label").classList.toggle("hidden", !(idx && idx.partitioned));
  const field = idx && idx.partition_field ? idx.partition_field : "partition";
  $("#partition-label").firstChild.textContent = (field === "state" ? "Jurisdiction" : field[0].toUpperCase() + field.slice(1)) + " ";
  // an index of a code's releases: search it as of an earlier one (the current release first)
  const releases = idx && idx.releases ? [...idx.releases].reverse() : [];
  const dates = (idx && idx.release_dates) || {};
  $("#release").innerHTML = releases.map((r) => `<option value="${esc(r)}">${esc(r)}${dates[r] ? ` · ${esc(dates[r])}` : ""}${r === idx.release ? " (current)" : ""}</option>`).join("");
  $("#release-label").classList.toggle("hidden", releases.length < 2);
}
function asOf() {
  const idx = currentIndex();
  const r = $("#release").value;
  return idx && idx.releases && idx.releases.length > 1 && r && r !== idx.release ? r : null;
}

function card(hit, terms, collection) {
  const div = document.createElement("div");
  div.className = "card";
  div.dataset.id = hit.id;
  const cite = hit.citation || hit.id;
  // short fields as chips; the heading path has its line, annotations open with the document
  const skip = new Set(["citation", "heading_path", ...ANNOTATIONS.map(([, k]) => k)]);
  const meta = Object.entries(hit.metadata || {})
    .filter(([k, v]) => v !== null && typeof v !== "object" && !skip.has(k) && String(v).length <= 80)
    .map(([k, v]) => `${k}: ${v}`);
  const chips = [...meta, hit.citation ? `id ${hit.id}` : null].filter(Boolean)
    .map((c) => `<span class="chip">${esc(c)}</span>`).join("");
  if (hit.duplicate_of) div.classList.add("duplicate");
  div.innerHTML = `<div class="top"><span class="rank">${hit.rank}.</span><span class="cite">${esc(cite)}</span>`
    + `<span class="score" title="score">${hit.score.toFixed(4)}</span></div>`
    + (hit.heading_path ? `<div class="path">${esc(hit.heading_path)}</div>` : "")
    + (hit.snippet !== undefined ? `<div class="snippet">${highlight(hit.snippet, terms)}</div>` : `<div class="snippet muted">(no collection: ids only)</div>`)
    + (chips ? `<div class="chips">${chips}</div>` : "")
    + (hit.duplicate_of ? `<div class="small muted">same text as result ${hit.duplicate_of}</div>` : "");
  if (collection) div.addEventListener("click", () => openDoc(collection, hit.id, state.lastQuery, asOf(), currentIndex()));
  return div;
}

// ---------------------------------------------------------------- the page's state lives in its URL
// #search?q=&index=&method=&partition=&k=  and  #runs?run=&topic=&compare=  (a link reproduces the view;
// back and forward step through searches and topics)
function pushState(hash) {
  if (state.restoring || location.hash === hash) return;
  history.pushState(null, "", hash);
}

async function restore() {
  const [panel, query] = location.hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  state.restoring = true;
  try {
    if (panel === "search" && params.get("q")) {
      showPanel("panel-search");
      if (params.get("index")) { $("#index").value = params.get("index"); fillIndexControls(); }
      if (params.get("method")) $("#method").value = params.get("method");
      if (params.get("partition")) $("#partition").value = params.get("partition");
      if (params.get("as_of")) $("#release").value = params.get("as_of");
      if (params.get("k")) $("#k").value = params.get("k");
      $("#q").value = params.get("q");
      await doSearch();
    } else if (panel === "runs" && params.get("run")) {
      showPanel("panel-runs");
      if ($("#run").value !== params.get("run")) { $("#run").value = params.get("run"); await loadRun(); }
      fillCompare($("#run").value);
      $("#compare").value = params.get("compare") || "";
      const i = state.shown.findIndex((t) => t.qid === params.get("topic"));
      if (i >= 0) await showTopic(i);
    }
  } finally { state.restoring = false; }
}
window.addEventListener("popstate", restore);

async function doSearch(ev) {
  if (ev) ev.preventDefault();
  const q = $("#q").value.trim();
  const idx = currentIndex();
  const results = $("#results");
  if (!q) { showError(results, "Type a query."); return; }
  const params = new URLSearchParams({ q, index: $("#index").value, method: $("#method").value, k: $("#k").value || "10" });
  if (idx && idx.partitioned) params.set("partition", $("#partition").value);
  if (asOf()) params.set("as_of", asOf());
  pushState(`#search?${params}`);
  $("#search-info").textContent = "Searching…";
  const t0 = performance.now();
  try {
    const res = await api(`/search?${params}`);
    state.lastQuery = q;
    results.innerHTML = "";
    const where = (res.partition ? ` in ${res.partition.replace(/_/g, " ")}` : "") + (asOf() ? `, as of release ${res.release}` : "");
    $("#search-info").textContent = `${res.hits.length} hits, ${res.method}${where} (${Math.round(performance.now() - t0)} ms)`;
    if (!res.hits.length) results.innerHTML = `<p class="muted">No document matches.</p>`;
    for (const h of res.hits) results.appendChild(card(h, res.terms, idx && idx.collection));
    const dups = res.hits.filter((h) => h.duplicate_of).length;
    if (dups) {
      $("#search-info").textContent += ` · ${dups} with the same text as a better-ranked hit`;
      results.classList.toggle("collapse", $("#collapse").checked);
    }
  } catch (err) {
    $("#search-info").textContent = "";
    showError(results, err);
  }
}

// ---------------------------------------------------------------- document view
// a statute's annotations, each one click away below its text
const ANNOTATIONS = [["History", "history"], ["Notes", "notes"], ["Case notes", "case_notes"]];

async function openDoc(collection, id, q, asOfRelease, idx) {
  const view = $("#doc-view");
  view.classList.remove("hidden");
  $("#doc-head").innerHTML = `<p class="muted">Loading ${esc(id)}…</p>`;
  $("#doc-text").textContent = "";
  $("#doc-notes").innerHTML = "";
  $("#doc-history").innerHTML = "";
  $("#doc-history").dataset.ready = "";
  try {
    const query = new URLSearchParams();
    if (q) query.set("q", q);
    if (asOfRelease) query.set("as_of", asOfRelease);
    const params = query.toString() ? `?${query}` : "";
    const doc = await api(`/doc/${encodeURIComponent(collection)}/${encodeURIComponent(id)}${params}`);
    const m = doc.metadata || {};
    const chips = [doc.state, doc.category, doc.partition ? `partition ${doc.partition}` : null,
                   m.release !== undefined ? `release ${m.release}` : null, m.status && m.status !== "in force" ? m.status : null,
                   doc.citation ? `id ${doc.id}` : null]
      .filter(Boolean).map((c) => `<span class="chip">${esc(c)}</span>`).join("");
    $("#doc-head").innerHTML = `<h2>${esc(doc.citation || doc.id)}</h2>`
      + (doc.heading_path ? `<div class="path" style="color:var(--accent)">${esc(doc.heading_path)}</div>` : "")
      + `<div>${chips}</div>`;
    $("#doc-text").innerHTML = highlight(doc.contents, doc.terms);
    const meta = doc.metadata || {};
    $("#doc-notes").innerHTML = ANNOTATIONS.filter(([, k]) => typeof meta[k] === "string" && meta[k].trim())
      .map(([label, k]) => `<details data-part="${k}"><summary>${label}</summary><div class="ann-text">${esc(meta[k])}</div></details>`)
      .join("");
    // an index of a code's releases: the section in each release it keeps, and what changed between two
    if (idx && idx.releases && idx.releases.length > 1) await showHistory(collection, idx.name, doc.id, asOfRelease || idx.release);
  } catch (err) {
    showError($("#doc-head"), err);
  }
}

// ---------------------------------------------------------------- a section's history (GET /history)
// A timeline of the releases the index keeps (date, status, text hash, changed or not) and a word diff of
// the section's text between two of them (GET /doc as_of each).
async function showHistory(collection, index, id, shown) {
  const box = $("#doc-history");
  try {
    const res = await api(`/history?${new URLSearchParams({ index, id })}`);
    const entries = res.releases;
    const label = (e) => `release ${e.release}${e.date ? ` · ${e.date}` : ""}`;
    const items = entries.map((e) => {
      const what = !e.present ? "absent" : [e.status, e.changed === true ? "text changed" : e.changed === false ? "text unchanged" : "first kept"]
        .filter(Boolean).join(" · ");
      return `<li data-release="${esc(e.release)}" class="${e.present ? "present" : "absent"}${e.changed ? " changed" : ""}${e.release === shown ? " shown" : ""}">`
        + `<span class="when">${esc(label(e))}</span> <span class="what">${esc(what)}</span>`
        + (e.sha256 ? ` <code class="hash" title="SHA-256 of the text">${esc(e.sha256.slice(0, 12))}</code>` : "") + `</li>`;
    }).join("");
    const options = entries.map((e) => `<option value="${esc(e.release)}">${esc(label(e))}${e.present ? "" : " (absent)"}</option>`).join("");
    box.innerHTML = `<h3>History</h3><ol class="timeline">${items}</ol>`
      + `<div class="diff-controls">Compare <select id="diff-a">${options}</select> with <select id="diff-b">${options}</select></div>`
      + `<div id="doc-diff" class="diff"></div>`;
    // the last change by default: the release before the newest changed one, and that one
    let b = entries.length - 1;
    for (let i = entries.length - 1; i > 0; i--) if (entries[i].changed) { b = i; break; }
    $("#diff-a").value = entries[Math.max(0, b - 1)].release;
    $("#diff-b").value = entries[b].release;
    const redraw = () => showDiff(collection, entries, $("#diff-a").value, $("#diff-b").value);
    $("#diff-a").addEventListener("change", redraw);
    $("#diff-b").addEventListener("change", redraw);
    await redraw();
  } catch (err) {
    showError(box, err);
  }
  box.dataset.ready = "1";
}

async function versionText(collection, entries, release) {
  const e = entries.find((x) => x.release === release);
  if (!e || !e.present) return "";
  const doc = await api(`/doc/${encodeURIComponent(collection)}/${encodeURIComponent(e.id)}?${new URLSearchParams({ as_of: release })}`);
  return doc.contents;
}

async function showDiff(collection, entries, a, b) {
  const out = $("#doc-diff");
  out.dataset.ready = "";
  const [ta, tb] = await Promise.all([versionText(collection, entries, a), versionText(collection, entries, b)]);
  if (a !== $("#diff-a").value || b !== $("#diff-b").value) return;  // another pair was chosen meanwhile
  const parts = diffText(ta, tb);
  const changed = parts.some(([op]) => op !== "=");
  out.innerHTML = `<div class="small muted">${changed ? "removed in" : "the same text in"} release ${esc(a)}${changed ? `, added in release ${esc(b)}` : ` and release ${esc(b)}`}</div>`
    + `<div class="diff-text">${parts.map(([op, t]) => op === "=" ? esc(t) : op === "-" ? `<del>${esc(t)}</del>` : `<ins>${esc(t)}</ins>`).join("")}</div>`;
  out.dataset.a = a;
  out.dataset.b = b;
  out.dataset.ready = "1";
}

// Words and the spaces between them (a linear scan: no backtracking).
function diffTokens(s) { return String(s ?? "").match(/\s+|\S+/g) || []; }

// The shortest edit script from text `a` to text `b` over words (Myers' O(ND) algorithm, after the common
// head and tail): [[op, text]] with op "=" (kept), "-" (only in a) or "+" (only in b), runs merged. Past
// MAX_D edits it gives up on finding the shortest: all of a removed, all of b added.
const MAX_D = 4000;
function diffText(a, b) {
  const A = diffTokens(a), B = diffTokens(b);
  let head = 0;
  while (head < A.length && head < B.length && A[head] === B[head]) head++;
  let tail = 0;
  while (tail < A.length - head && tail < B.length - head && A[A.length - 1 - tail] === B[B.length - 1 - tail]) tail++;
  const x0 = A.slice(head, A.length - tail), y0 = B.slice(head, B.length - tail);
  const ops = [];
  const push = (op, t) => { const last = ops[ops.length - 1]; if (last && last[0] === op) last[1] += t; else ops.push([op, t]); };
  A.slice(0, head).forEach((t) => push("=", t));
  const n = x0.length, m = y0.length;
  const middle = [];
  if (n === 0 || m === 0) {
    x0.forEach((t) => middle.push(["-", t]));
    y0.forEach((t) => middle.push(["+", t]));
  } else {
    const max = Math.min(n + m, MAX_D), off = max + 1;
    const v = new Int32Array(2 * max + 3);
    const trace = [];
    let found = false;
    for (let d = 0; d <= max && !found; d++) {
      trace.push(v.slice(Math.max(0, off - d - 1), off + d + 2));  // k from -d-1 to d+1
      for (let k = -d; k <= d; k += 2) {
        let x = (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
        let y = x - k;
        while (x < n && y < m && x0[x] === y0[y]) { x++; y++; }
        v[off + k] = x;
        if (x >= n && y >= m) { found = true; break; }
      }
    }
    if (!found) {
      x0.forEach((t) => middle.push(["-", t]));
      y0.forEach((t) => middle.push(["+", t]));
    } else {
      let x = n, y = m;
      for (let d = trace.length - 1; d >= 0; d--) {
        const w = trace[d], lo = Math.max(0, off - d - 1);
        const at = (k) => w[off + k - lo];
        const k = x - y;
        const pk = (k === -d || (k !== d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
        const px = at(pk), py = px - pk;
        while (x > px && y > py) { middle.push(["=", x0[x - 1]]); x--; y--; }
        if (d > 0) middle.push(x === px ? ["+", y0[py]] : ["-", x0[px]]);
        x = px; y = py;
      }
      middle.reverse();
    }
  }
  middle.forEach(([op, t]) => push(op, t));
  A.slice(A.length - tail).forEach((t) => push("=", t));
  return ops;
}
function closeDoc() { $("#doc-view").classList.add("hidden"); }
$("#doc-close").addEventListener("click", closeDoc);
$("#doc-view").addEventListener("click", (e) => { if (e.target.id === "doc-view") closeDoc(); });
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") closeDoc();
  if ($("#panel-runs").classList.contains("hidden") || e.target.tagName === "INPUT") return;
  if (e.key === "ArrowDown" || e.key === "j") { stepTopic(1); e.preventDefault(); }
  if (e.key === "ArrowUp" || e.key === "k") { stepTopic(-1); e.preventDefault(); }
});

// ---------------------------------------------------------------- run explorer
// Only runs scored against the same qrels (the same topics) can be compared.
function fillCompare(name) {
  const run = state.runs.find((r) => r.name === name);
  const keep = $("#compare").value;
  const others = state.runs.filter((r) => r.name !== name && run && r.qrels === run.qrels);
  $("#compare").innerHTML = `<option value="">(none)</option>` + others.map((r) => `<option>${esc(r.name)}</option>`).join("");
  if (others.some((r) => r.name === keep)) $("#compare").value = keep;
}

async function loadRun() {
  const name = $("#run").value;
  fillCompare(name);
  const list = $("#topics");
  list.innerHTML = "";
  $("#topic-view").innerHTML = `<p class="muted">Choose a topic.</p>`;
  if (!name) return;
  try {
    const res = await api(`/runs/${encodeURIComponent(name)}/topics`);
    state.topics = res.topic_list;
    state.grades = res.grade_names || null;
    state.measureNames = res.measure_names || {};
    state.measure = res.all ? Object.keys(res.all).find((k) => typeof res.all[k] === "number" && k !== "num_q") : null;
    const cats = [...new Set(state.topics.map((t) => t.category || t.state).filter(Boolean))].sort();
    const byState = state.topics.some((t) => t.state) && !state.topics.some((t) => t.category);
    $("#category-label").firstChild.textContent = (byState ? "Jurisdiction" : "Category") + " ";
    $("#category-label").classList.toggle("hidden", !cats.length);
    $("#category").innerHTML = `<option value="">(all)</option>` + cats.map((c) => `<option>${esc(c)}</option>`).join("");
    const all = res.all ? Object.entries(res.all).filter(([k, v]) => typeof v === "number" && k !== "num_q")
      .map(([k, v]) => `${esc(measureName(k))} <b>${fmt(v)}</b>`).join(" · ") : "no qrels";
    const missing = res.qrels_topics_not_in_run ? ` (${res.qrels_topics_not_in_run} judged topic(s) not in this run)` : "";
    $("#run-summary").innerHTML = `${esc(res.file)}: ${res.topics} topics${missing}${res.judged_only ? ", judged-only" : ""}; ${all}`;
    renderTopics();
  } catch (err) { showError($("#topic-view"), err); }
}

function renderTopics() {
  const cat = $("#category").value;
  state.shown = state.topics.filter((t) => !cat || t.category === cat || t.state === cat);
  const list = $("#topics");
  list.innerHTML = "";
  const m = state.measure;
  state.shown.forEach((t, i) => {
    const li = document.createElement("li");
    li.dataset.qid = t.qid;
    const v = t.measures && m ? t.measures[m] : null;
    const bar = typeof v === "number" ? `<span class="bar" style="width:${Math.round(v * 40)}px"></span>` : "";
    li.innerHTML = `<span class="t-text" title="${esc(t.text || t.qid)}">${esc(t.text || t.qid)}</span>`
      + `<span class="t-score" title="${esc(m ? measureName(m) : "")}">${typeof v === "number" ? v.toFixed(3) : "–"}</span>${bar}`;
    li.addEventListener("click", () => showTopic(i));
    list.appendChild(li);
  });
  state.topicPos = -1;
}

function stepTopic(d) {
  if (!state.shown.length) return;
  const next = state.topicPos < 0 ? 0 : Math.max(0, Math.min(state.shown.length - 1, state.topicPos + d));
  showTopic(next);
}

function rankCell(r, base) {
  if (r === null || r === undefined) return `<span class="muted">not retrieved</span>`;
  if (base === undefined || base === null) return `${r}`;
  const d = base - r;
  return `${r}` + (d ? ` <span class="${d > 0 ? "up" : "down"}">(${d > 0 ? "+" : ""}${d})</span>` : "");
}

async function showTopic(i) {
  state.topicPos = i;
  document.querySelectorAll("#topics li").forEach((li, j) => li.classList.toggle("active", j === i));
  const active = document.querySelectorAll("#topics li")[i];
  if (active) active.scrollIntoView({ block: "nearest" });
  const t = state.shown[i];
  const run = $("#run").value, other = $("#compare").value;
  pushState(`#runs?${new URLSearchParams({ run, topic: t.qid, ...(other ? { compare: other } : {}) })}`);
  const params = new URLSearchParams({ k: "20" });
  if (other) params.set("compare", other);
  const view = $("#topic-view");
  try {
    const res = await api(`/runs/${encodeURIComponent(run)}/topics/${encodeURIComponent(t.qid)}?${params}`);
    const cmp = res.compare;
    const measures = (res.measures ? Object.entries(res.measures).filter(([, v]) => typeof v === "number") : [])
      .map(([k, v]) => `<span title="${esc(k)}">${esc(measureName(k))} <b>${fmt(v)}</b>${cmp && cmp.measures && typeof cmp.measures[k] === "number" ? ` <span class="muted">vs ${fmt(cmp.measures[k])}</span>` : ""}</span>`).join("");
    const unscored = !res.in_run ? "topic not in this run (nothing retrieved for it)"
      : !res.has_qrels ? "not scored (no qrels for this topic)" : "no measure value";
    const notInOther = cmp && !cmp.in_run ? `<p class="muted">This topic is not in ${esc(cmp.run)}.</p>` : "";
    const fields = Object.entries(res.fields || {}).filter(([, v]) => typeof v !== "object")
      .map(([k, v]) => `<span class="chip">${esc(k)}: ${esc(v)}</span>`).join("");
    const open = (id) => res.collection ? `data-doc="${esc(id)}"` : "";
    const gold = res.gold.length ? `<table class="ranking gold"><tr><th>gold document</th><th>label</th><th>rank in ${esc(run)}</th>${cmp ? `<th>rank in ${esc(cmp.run)}</th>` : ""}</tr>`
      + res.gold.map((g) => `<tr class="doc" ${open(g.id)}><td>${esc(g.citation || g.id)}${g.snippet ? `<div class="small muted">${highlight(g.snippet, res.terms)}</div>` : ""}</td>`
        + `<td>${labelBadge(g.label, true)}</td><td class="num">${rankCell(g.rank)}${res.judged_only && g.judged_rank ? ` <span class="muted small" title="rank among judged documents, as judged-only scoring sees it">(${g.judged_rank} judged)</span>` : ""}</td>${cmp ? `<td class="num">${rankCell(g.other_rank)}</td>` : ""}</tr>`).join("")
      + `</table>` : `<p class="muted">No relevant document in the qrels for this topic.</p>`;
    const rows = res.hits.map((h) => `<tr class="doc" ${open(h.id)}><td class="num">${h.rank}</td><td>${labelBadge(h.label, h.judged)}</td>`
      + `<td>${esc(h.citation || h.id)}${h.heading_path ? `<div class="small" style="color:var(--accent)">${esc(h.heading_path)}</div>` : ""}`
      + `${h.snippet ? `<div class="small muted">${highlight(h.snippet, res.terms)}</div>` : ""}</td>`
      + `<td class="num">${h.score.toFixed(4)}</td>${cmp ? `<td class="num">${rankCell(h.other_rank, h.rank)}</td>` : ""}</tr>`).join("");
    view.innerHTML = `<h2>${esc(res.text || res.qid)}</h2><div class="muted small">topic ${esc(res.qid)} · ${i + 1} of ${state.shown.length}`
      + ` · ${res.retrieved} retrieved${res.judged_only ? " · scored judged-only" : ""}</div><div>${fields}</div>`
      + `<div class="measures">${measures || `<span class="muted">${unscored}</span>`}</div>${notInOther}`
      + `<h3>Top ${res.hits.length} of ${esc(run)}${cmp ? ` (with ranks in ${esc(cmp.run)})` : ""}</h3>`
      + `<div class="legend">${labelBadge(null)} ${labelBadge(0, true)} ${labelBadge(1, true)} ${labelBadge(2, true)} ${labelBadge(3, true)} ${labelBadge(4, true)}</div>`
      + (res.hits.length ? `<table class="ranking hits"><tr><th>rank</th><th>label</th><th>document</th><th>score</th>${cmp ? `<th>rank in ${esc(cmp.run)}</th>` : ""}</tr>${rows}</table>`
        : `<p class="muted">${esc(run)} retrieved nothing for this topic.</p>`)
      + `<h3>Where the gold documents ended up</h3>${gold}`;
    view.querySelectorAll("tr[data-doc]").forEach((tr) => tr.addEventListener("click", () => openDoc(res.collection, tr.dataset.doc, res.text)));
  } catch (err) { showError(view, err); }
}

// ---------------------------------------------------------------- start
async function start() {
  try {
    const health = await api("/health");
    const indexes = await api("/indexes");
    const runs = await api("/runs").catch(() => []);  // a key without the runs scope: no run explorer
    state.indexes = indexes;
    state.runs = runs;
    $("#status").textContent = `v${health.version} · ${indexes.length} index(es) · ${runs.length} run(s)`;
    $("#index").innerHTML = indexes.map((i) => `<option>${esc(i.name)}</option>`).join("");
    fillIndexControls();
    $("#run").innerHTML = runs.map((r) => `<option>${esc(r.name)}</option>`).join("");
    if (!indexes.length) $("#search-form").innerHTML = `<p class="muted">No index is served (start with --index NAME=DIR).</p>`;
    if (!indexes.length && runs.length) showPanel("panel-runs");
    if (runs.length) await loadRun();
    if (location.hash) await restore();
    document.body.dataset.ready = "1";
  } catch (err) { showError($("#results"), err); }
}

$("#search-form").addEventListener("submit", doSearch);
$("#index").addEventListener("change", fillIndexControls);
$("#run").addEventListener("change", loadRun);
$("#compare").addEventListener("change", () => { if (state.topicPos >= 0) showTopic(state.topicPos); });
$("#collapse").addEventListener("change", () => $("#results").classList.toggle("collapse", $("#collapse").checked));
$("#category").addEventListener("change", renderTopics);
$("#prev-topic").addEventListener("click", () => stepTopic(-1));
$("#next-topic").addEventListener("click", () => stepTopic(1));
start();
