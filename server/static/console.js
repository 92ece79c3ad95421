// Shepherd console: confirmations and actions through the JSON API, the
// task form, and live updates from /api/v1/events. No framework, no
// build step; the page works (read-only) without it.
"use strict";

function flash(msg, bad) {
  const el = document.getElementById("flash");
  if (!el) return;
  el.textContent = msg;
  el.className = bad ? "flash bad" : "flash";
  el.hidden = false;
}

async function api(method, url, body, headers) {
  const h = Object.assign({"Content-Type": "application/json"}, headers || {});
  const res = await fetch(url, {method, headers: h, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body)});
  let data = null;
  const text = await res.text();
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = {error: {message: text}}; }
  if (!res.ok) {
    throw new Error((data && data.error && data.error.message) || res.statusText);
  }
  return {data, res};
}

function wireActions() {
  for (const b of document.querySelectorAll("[data-action]")) {
    b.addEventListener("click", async (ev) => {
      ev.preventDefault();
      if (b.dataset.confirm && !window.confirm(b.dataset.confirm)) return;
      b.disabled = true;
      try {
        const {data} = await api(b.dataset.method || "POST", b.dataset.action, b.dataset.method === "DELETE" ? undefined : {});
        if (b.dataset.then) { window.location = b.dataset.then; return; }
        flash("Done: " + b.textContent.trim() + (data && data.runKey ? " (run " + data.runKey + ")" : ""));
      } catch (e) {
        flash(e.message, true);
      } finally {
        b.disabled = false;
      }
    });
  }
  onSubmit("run-form", async (f, form) => {
    const body = {};
    const params = {};
    for (const l of lines(f.get("params"))) {
      const i = l.indexOf("=");
      if (i <= 0) throw new Error("param " + JSON.stringify(l) + ": want NAME=value");
      params[l.slice(0, i)] = l.slice(i + 1);
    }
    if (Object.keys(params).length) body.params = params;
    const key = (f.get("runKey") || "").trim();
    if (key) body.runKey = key;
    const {data} = await api("POST", "/api/v1/jobs/" + encodeURIComponent(form.dataset.job) + "/run", body);
    flash("Done: run " + data.runKey);
  });
  onSubmit("skip-form", async (f, form) => {
    const {data} = await api("POST", "/api/v1/tasks/" + encodeURIComponent(form.dataset.task) + "/skip-event", {confirm: f.get("confirm")});
    flash("Skipped to " + data.after.file + ":" + data.after.pos + "; start the task to resume");
  });
  onSubmit("switch-form", async (f, form) => {
    const to = f.get("to");
    if (!window.confirm("Make " + form.dataset.task + " read from " + to + "?")) return;
    const {data} = await api("POST", "/api/v1/tasks/" + encodeURIComponent(form.dataset.task) + "/switch-source", {to});
    flash(data.from === data.to ? "Reads from " + to + " already" :
      data.running ? "Asked the owner to switch from " + data.from + " to " + to : "Stopped: it reads from " + to + " once started");
  });
  onSubmit("verify-form", async (f, form) => {
    const tables = (f.get("tables") || "").split(",").map((x) => x.trim()).filter((x) => x);
    const repair = f.get("repair") === "on";
    if (repair && !window.confirm("Rewrite the rows of " + form.dataset.task + " that differ on its target?")) return;
    const button = form.querySelector("button");
    button.disabled = true;
    flash("Verifying " + form.dataset.task + "…");
    try {
      const {data} = await api("POST", "/api/v1/tasks/" + encodeURIComponent(form.dataset.task) + "/verify", {tables, repair});
      let msg = data.differences ? data.differences + " confirmed differences" : "Equal";
      if (data.repaired) msg += ", " + data.repaired + " rows repaired";
      flash(msg + " (" + data.chunks + " chunks, " + data.rows + " rows); reload for the keys", data.differences > 0);
    } finally {
      button.disabled = false;
    }
  });
  onSubmit("reset-form", async (f, form) => {
    const {data} = await api("POST", "/api/v1/tasks/" + encodeURIComponent(form.dataset.task) + "/reset-position",
      {position: f.get("position"), confirm: f.get("confirm")});
    flash("Position reset from " + data.before.file + ":" + data.before.pos);
  });
  for (const form of document.querySelectorAll("form.silence-form")) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const f = new FormData(form);
      try {
        await api("POST", "/api/v1/silences", {alert: form.dataset.alert, for: f.get("for"), comment: f.get("comment")});
        window.location = "/alerts";
      } catch (e) {
        flash(e.message, true);
      }
    });
  }
  onSubmit("user-form", async (f) => {
    await api("POST", "/api/v1/users", {name: f.get("name"), role: f.get("role"), password: f.get("password"), replace: f.get("replace") === "on"});
    window.location = "/users";
  });
  onSubmit("token-form", async (f) => {
    const {data} = await api("POST", "/api/v1/tokens", {user: f.get("user"), note: f.get("note")});
    const out = document.getElementById("new-token");
    out.textContent = "Token for " + data.user + " (shown this once): " + data.token;
    out.hidden = false;
  });
}

// onSubmit sends the form of that id through fn instead of the browser,
// showing a failure's message.
function onSubmit(id, fn) {
  const form = document.getElementById(id);
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await fn(new FormData(form), form);
    } catch (e) {
      flash(e.message, true);
    }
  });
}

function lines(s) {
  return (s || "").split("\n").map((x) => x.trim()).filter((x) => x);
}

// specFromForm builds the task spec (the JSON `ctl task add` takes).
function specFromForm(form) {
  const f = new FormData(form);
  const ep = (p) => {
    const e = {host: f.get(p + ".host"), port: Number(f.get(p + ".port")) || 3306, user: f.get(p + ".user"), flavor: f.get(p + ".flavor")};
    if (f.get(p + ".password")) e.password = f.get(p + ".password");
    if (f.get(p + ".passwordFile")) e.passwordFile = f.get(p + ".passwordFile");
    return e;
  };
  const sp = {version: 1, name: f.get("name"), source: ep("source"), target: targetFromForm(f),
    filter: {include: lines(f.get("filter.include")), exclude: lines(f.get("filter.exclude"))},
    start: f.get("start"), state: f.get("state"), standby: {mode: f.get("standby.mode")}};
  if (sp.standby.mode === "cold" && f.get("standby.group")) sp.standby.group = f.get("standby.group");
  const hosts = lines(f.get("source.hosts"));
  if (hosts.length) sp.source.hosts = hosts;
  if (f.get("source.failoverAfter")) sp.source.failoverAfter = f.get("source.failoverAfter");
  return sp;
}

// targetFromForm builds the target of the kind chosen: the fields of the
// other kinds are disabled (showKind), so FormData leaves them out.
function targetFromForm(f) {
  const kind = f.get("target.kind") || "mysql";
  if (kind === "mysql") {
    const e = {host: f.get("target.host"), port: Number(f.get("target.port")) || 3306, user: f.get("target.user"), flavor: f.get("target.flavor")};
    if (f.get("target.password")) e.password = f.get("target.password");
    if (f.get("target.passwordFile")) e.passwordFile = f.get("target.passwordFile");
    return e;
  }
  const t = {kind: kind};
  for (const [k, v] of f.entries()) {
    if (!k.startsWith("target.") || k === "target.kind") continue;
    const name = k.slice(7);
    if (name === "brokers") {
      const bs = lines(v);
      if (bs.length) t.brokers = bs;
    } else if (String(v).trim() !== "") {
      t[name] = String(v).trim();
    }
  }
  return t;
}

// showKind shows the target fields of the kind chosen, and disables the
// others' so that they are neither required nor sent.
function showKind(form) {
  const sel = form.querySelector("#f-target-kind");
  if (!sel) return;
  const apply = () => {
    for (const fs of form.querySelectorAll("fieldset.kind")) {
      const on = fs.dataset.kind === sel.value;
      fs.hidden = !on;
      fs.disabled = !on;
    }
  };
  sel.addEventListener("change", apply);
  apply();
}

function showValidation(rep) {
  const out = document.getElementById("validate-result");
  out.replaceChildren();
  const h = document.createElement("p");
  h.id = "validate-verdict";
  h.className = rep.ok ? "ok" : "bad";
  h.textContent = rep.ok ? "All checks passed." : "Some checks failed.";
  out.append(h);
  const ul = document.createElement("ul");
  for (const c of rep.checks) {
    const li = document.createElement("li");
    li.className = c.ok ? "ok" : "bad";
    li.textContent = (c.ok ? "✓ " : "✗ ") + c.name + ": " + c.detail;
    ul.append(li);
  }
  out.append(ul);
  if (rep.tables && rep.tables.length) {
    const p = document.createElement("p");
    p.textContent = "Tables selected: " + rep.tables.join(", ") + (rep.moreTables ? " and " + rep.moreTables + " more" : "");
    out.append(p);
  }
  out.hidden = false;
}

// wireStandbyNote keeps the note beside the form's standby fields in
// step with them: whether a live core would run the task as chosen.
function wireStandbyNote(form) {
  const mode = document.getElementById("f-standby-mode");
  const group = document.getElementById("f-standby-group");
  const name = document.getElementById("f-name");
  const note = document.getElementById("standby-note");
  if (!mode || !group || !note) return;
  let asked = 0, timer = null;
  const check = async () => {
    group.disabled = mode.value !== "cold";
    const n = ++asked;
    const q = new URLSearchParams({mode: mode.value, group: mode.value === "cold" ? group.value.trim() : "", task: name ? name.value.trim() : ""});
    try {
      const {data} = await api("GET", "/api/v1/cores?" + q);
      if (n !== asked) return; // a newer question is on its way
      note.textContent = data.check.note;
      note.className = data.check.ok ? "ok" : "bad";
    } catch (e) {
      if (n !== asked) return;
      note.textContent = "could not read the live cores: " + e.message;
      note.className = "bad";
    }
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(check, 250); };
  mode.addEventListener("change", check);
  group.addEventListener("input", later);
  if (name) name.addEventListener("input", later);
  group.disabled = mode.value !== "cold";
}

function wireTaskForm() {
  const form = document.getElementById("task-form");
  if (!form) return;
  wireStandbyNote(form);
  showKind(form);
  document.getElementById("test-connection").addEventListener("click", async () => {
    if (!form.reportValidity()) return;
    try {
      const {data} = await api("POST", "/api/v1/tasks:validate", specFromForm(form));
      showValidation(data);
    } catch (e) {
      flash(e.message, true);
    }
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const sp = specFromForm(form);
    try {
      if (form.dataset.edit) {
        await api("PUT", "/api/v1/tasks/" + encodeURIComponent(form.dataset.edit), sp, {"If-Match": '"' + form.dataset.version + '"'});
      } else {
        await api("POST", "/api/v1/tasks", sp);
      }
      window.location = "/tasks/" + encodeURIComponent(sp.name);
    } catch (e) {
      flash(e.message, true);
    }
  });
}

// jobFromForm builds the job (the JSON stored at /scheduler/jobs/<name>,
// the fields of a jobs file entry); the server validates it as
// `ctl job add` does.
function jobFromForm(form) {
  const f = new FormData(form);
  const j = {name: (f.get("name") || "").trim(), schedule: (f.get("schedule") || "").trim()};
  for (const k of ["timeZone", "command", "func", "dir", "timeout", "retryBackoff", "concurrencyPolicy", "startingDeadline", "whenUpstream", "routing"]) {
    const v = (f.get(k) || "").trim();
    if (v) j[k] = v;
  }
  for (const k of ["retries", "historyLimit", "shards"]) {
    const v = (f.get(k) || "").trim();
    if (v) j[k] = /^-?\d+$/.test(v) ? Number(v) : v; // the server names a bad value
  }
  // Arguments as typed, one a line: spaces inside them matter.
  const args = (f.get("args") || "").split("\n").map((x) => x.replace(/\r$/, "")).filter((x) => x !== "");
  if (args.length) j.args = args;
  const env = {};
  for (const l of lines(f.get("env"))) {
    const i = l.indexOf("=");
    if (i <= 0) throw new Error("env: " + JSON.stringify(l) + ": want NAME=value");
    env[l.slice(0, i)] = l.slice(i + 1);
  }
  if (Object.keys(env).length) j.env = env;
  const after = lines(f.get("after"));
  // One line a dependency, as scheduler.ParseDependency reads it: a job,
  // or task:TASK[@scheduled+D], a freshness gate.
  if (after.length) j.after = after.map((l) => {
    if (!l.startsWith("task:")) return {job: l};
    const g = l.slice(5), i = g.indexOf("@");
    return i < 0 ? {task: g} : {task: g.slice(0, i), caughtUpTo: g.slice(i + 1)};
  });
  const url = (f.get("httpUrl") || "").trim();
  if (url) {
    j.http = {url: url};
    const m = (f.get("httpMethod") || "").trim();
    if (m) j.http.method = m;
    const body = f.get("httpBody") || "";
    if (body) j.http.body = body;
    const hs = {};
    for (const l of lines(f.get("httpHeaders"))) {
      const i = l.indexOf(":");
      if (i <= 0) throw new Error("http.headers: " + JSON.stringify(l) + ": want Name: value");
      hs[l.slice(0, i).trim()] = l.slice(i + 1).trim();
    }
    if (Object.keys(hs).length) j.http.headers = hs;
    const st = (f.get("httpSuccess") || "").trim().split(/\s+/).filter((x) => x);
    if (st.length) j.http.successStatus = st.map((x) => /^\d+$/.test(x) ? Number(x) : x);
  }
  const sel = {};
  for (const l of lines(f.get("nodeSelector"))) {
    const i = l.indexOf("=");
    if (i <= 0) throw new Error("nodeSelector: " + JSON.stringify(l) + ": want key=value");
    sel[l.slice(0, i)] = l.slice(i + 1);
  }
  if (Object.keys(sel).length) j.nodeSelector = sel;
  return j;
}

function wireJobForm() {
  onSubmit("job-form", async (f, form) => {
    const j = jobFromForm(form);
    if (form.dataset.edit) {
      await api("PUT", "/api/v1/jobs/" + encodeURIComponent(form.dataset.edit), j, {"If-Match": '"' + form.dataset.version + '"'});
    } else {
      await api("POST", "/api/v1/jobs", j);
    }
    window.location = "/jobs/" + encodeURIComponent(j.name);
  });
}

function setField(kind, name, field, value) {
  for (const el of document.querySelectorAll("[data-" + kind + "]")) {
    if (el.dataset[kind] === name && el.dataset.field === field) {
      const v = value === undefined || value === null ? "" : String(value);
      if (el.textContent !== v) el.textContent = v;
    }
  }
}

// row builds a table row of text cells (never HTML from the server).
function row(cells, stateCol) {
  const tr = document.createElement("tr");
  cells.forEach((c, i) => {
    const td = document.createElement("td");
    td.textContent = c === undefined || c === null ? "" : String(c);
    if (i === stateCol) td.className = "state";
    tr.append(td);
  });
  return tr;
}

// liveLists are the lists the event stream keeps whole: each element
// with data-list="<name>" holds one child per item (data-key), its cells
// marked data-field. Items of a section the snapshot could not read are
// left as they are rather than emptied.
const taskLink = (t) => "/tasks/" + encodeURIComponent(t.name);
const jobLink = (j) => "/jobs/" + encodeURIComponent(j.name);
const liveLists = {
  "tasks": {section: "tasks", items: (s) => s.tasks, cols: [
    {f: "name", v: (t) => t.name, href: taskLink}, {f: "standby", v: (t) => t.standby}, {f: "desired", v: (t) => t.desired},
    {f: "state", v: (t) => t.state, cls: "state"}, {f: "owner", v: (t) => t.owner}, {f: "position", v: (t) => t.position},
    {f: "lag", v: (t) => t.lag}, {f: "error", v: (t) => t.error, cls: "err"}]},
  "jobs": {section: "jobs", items: (s) => s.jobs, cols: [
    {f: "name", v: (j) => j.name, href: jobLink}, {f: "schedule", v: (j) => j.schedule},
    {f: "defined", v: (j) => j.defined + (j.error ? " " + j.error : ""), cls: (j) => j.error ? "err" : ""},
    {f: "paused", v: (j) => j.paused}, {f: "running", v: (j) => j.running ? "running" : ""},
    {f: "lastRun", v: (j) => j.lastRun}, {f: "lastState", v: (j) => j.lastState}, {f: "next", v: (j) => j.next}]},
  "overview-tasks": {section: "tasks", items: (s) => s.tasks, cols: [
    {f: "name", v: (t) => t.name, href: taskLink}, {f: "state", v: (t) => t.state, cls: "state"}]},
  "overview-jobs": {section: "jobs", items: (s) => s.jobs, cols: [
    {f: "name", v: (j) => j.name, href: jobLink}, {f: "lastState", v: (j) => j.lastState}, {f: "paused", v: (j) => j.paused ? "(paused)" : ""}]},
  "overview-collectors": {section: "collectors", items: (s) => s.collectors, cols: [
    {f: "name", v: (c) => c.name}, {f: "alive", v: (c) => c.alive ? "alive" : "dead"}]},
};

// setCell makes a cell show text (in a link to href when given), with
// class cls, touching the DOM only where it differs.
function setCell(cell, text, href, cls) {
  text = text === undefined || text === null ? "" : String(text);
  if (cell.className !== cls) cell.className = cls;
  if (!href) {
    if (cell.children.length || cell.textContent !== text) cell.textContent = text;
    return;
  }
  let a = cell.firstElementChild;
  if (!a || a.tagName !== "A" || cell.childNodes.length !== 1) {
    a = document.createElement("a");
    cell.replaceChildren(a);
  }
  if (a.getAttribute("href") !== href) a.setAttribute("href", href);
  if (a.textContent !== text) a.textContent = text;
}

// syncList makes the list el show items: rows added, updated in place,
// removed and kept in the items' order; a placeholder when empty.
function syncList(el, spec, items) {
  const row = el.tagName === "TBODY" ? "tr" : "li";
  const cellTag = row === "tr" ? "td" : "span";
  const have = new Map();
  for (const r of Array.from(el.children)) {
    if (r.dataset.key !== undefined) have.set(r.dataset.key, r);
    else r.remove(); // the placeholder, or anything else not an item
  }
  items.forEach((it, i) => {
    const key = spec.cols[0].v(it);
    let r = have.get(key);
    have.delete(key);
    if (!r) {
      r = document.createElement(row);
      r.dataset.key = key;
      spec.cols.forEach((c, j) => {
        if (j && row === "li") r.append(" ");
        const cell = document.createElement(cellTag);
        cell.dataset.field = c.f;
        r.append(cell);
      });
    }
    for (const c of spec.cols) {
      const cell = r.querySelector(":scope > [data-field='" + c.f + "']");
      if (cell) setCell(cell, c.v(it), c.href && c.href(it), typeof c.cls === "function" ? c.cls(it) : (c.cls || ""));
    }
    if (el.children[i] !== r) el.insertBefore(r, el.children[i] || null);
  });
  for (const r of have.values()) r.remove();
  if (!items.length && el.dataset.empty) {
    const p = document.createElement(row);
    const cell = document.createElement(row === "tr" ? "td" : "span");
    if (row === "tr") cell.colSpan = spec.cols.length;
    cell.textContent = el.dataset.empty;
    p.append(cell);
    el.append(p);
  }
}

// syncLists brings every live list and count of the page up to the
// snapshot s.
function syncLists(s) {
  const errors = s.errors || {};
  for (const el of document.querySelectorAll("[data-list]")) {
    const spec = liveLists[el.dataset.list];
    if (spec && !errors[spec.section]) syncList(el, spec, spec.items(s) || []);
  }
  for (const el of document.querySelectorAll("[data-count]")) {
    const spec = liveLists[el.dataset.count];
    if (!spec || errors[spec.section]) continue;
    const n = String((spec.items(s) || []).length);
    if (el.textContent !== n) el.textContent = n;
  }
}

function utc(t) {
  return t && !t.startsWith("0001") ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
}

// showSpec makes the task page's spec block show the task as just read,
// so that it never contradicts the state above it.
function showSpec(data) {
  const set = (id, text) => {
    const el = document.getElementById(id);
    if (el && el.textContent !== text) el.textContent = text;
  };
  set("task-spec", data.spec ? JSON.stringify(data.spec, null, 2) : "null");
  set("task-spec-version", String(data.specVersion));
  set("task-spec-error", data.specError || "");
}

// refreshTables re-reads the task's instances or the job's runs, when the
// page shows them, after a new snapshot.
async function refreshTables() {
  const inst = document.getElementById("instances");
  if (inst) {
    try {
      const {data} = await api("GET", "/api/v1/tasks/" + encodeURIComponent(inst.dataset.task));
      showSpec(data);
      const rows = (data.instances || []).map((i) => row([i.name, i.state.state, i.state.host, i.state.epoch,
        i.state.position.file ? i.state.position.file + ":" + i.state.position.pos : "", i.state.state === "RUNNING" ? secs(i.state.lagSeconds) : "-",
        perSecond(i.state.rowsPerSecond), utc(i.state.since), i.state.error], 1));
      inst.tBodies[0].replaceChildren(...(rows.length ? rows : [row(["No core stands by for this task."])]));
    } catch (e) { /* the next snapshot tries again */ }
  }
  const runs = document.getElementById("runs");
  if (runs) {
    try {
      const {data} = await api("GET", "/api/v1/jobs/" + encodeURIComponent(runs.dataset.job) + "/runs");
      showRuns(runs, data || []);
    } catch (e) { /* the next snapshot tries again */ }
  }
}

// showRuns makes the job page's history show runs (newest first) as the
// server renders it: one tbody per run, its output as text in a <pre>
// that keeps the output's lines.
function showRuns(table, runs) {
  const sig = JSON.stringify(runs);
  if (table.dataset.sig === sig) return; // unchanged: keep a selection
  table.dataset.sig = sig;
  const job = table.dataset.job;
  const took = (r) => r.start && r.end ? (new Date(r.end) - new Date(r.start)) + "ms" : "";
  const bodies = runs.map((r) => {
    const tb = document.createElement("tbody");
    tb.className = "run";
    tb.id = "run-" + r.runKey;
    if (!r.result) {
      if (r.waiting) {
        tb.append(row([r.runKey, "waiting", "", "", "", "", r.waiting.for + " (missed after " + utc(r.waiting.until) + ")"], 1));
      } else {
        tb.append(row([r.runKey, r.running ? "running" : "pending"], 1));
      }
      return tb;
    }
    const head = row([r.runKey, r.result.status, r.result.host, utc(r.result.start), took(r.result), r.result.exitCode, ""], 1);
    const a = document.createElement("a");
    a.href = "/api/v1/jobs/" + encodeURIComponent(job) + "/runs/" + encodeURIComponent(r.runKey) + "/output";
    a.setAttribute("download", "");
    a.textContent = "as text";
    head.lastElementChild.append(a);
    const out = document.createElement("tr");
    out.className = "output";
    const td = document.createElement("td");
    td.colSpan = 7;
    if (r.result.error) {
      const p = document.createElement("p");
      p.className = "err";
      p.textContent = r.result.error;
      td.append(p);
    }
    if (r.result.items) {
      const p = document.createElement("p");
      p.className = "hint items";
      p.textContent = "Items: " + r.result.items.map((it) => it.item + " " + it.status + " (attempt " + it.attempt + " on " + it.host + ")").join(", ");
      td.append(p);
    }
    if (r.result.params) {
      const p = document.createElement("p");
      p.className = "hint params";
      p.textContent = "Parameters: " + Object.keys(r.result.params).sort().map((k) => k + "=" + r.result.params[k]).join(" ");
      td.append(p);
    }
    const pre = document.createElement(r.result.output ? "pre" : "p");
    pre.className = r.result.output ? "output" : "hint";
    pre.textContent = r.result.output || "No output.";
    td.append(pre);
    out.append(td);
    tb.append(head, out);
    return tb;
  });
  if (!bodies.length) {
    const tb = document.createElement("tbody");
    tb.append(row(["No runs yet."]));
    tb.firstChild.firstChild.colSpan = 7;
    bodies.push(tb);
  }
  for (const tb of Array.from(table.tBodies)) tb.remove();
  table.append(...bodies);
}

// syncGrid makes the jobs page's run grid show the snapshot's jobs and
// their runs, a row rebuilt only when its runs changed.
function syncGrid(s) {
  const el = document.querySelector("[data-grid]");
  if (!el || (s.errors && s.errors.jobs)) return;
  const have = new Map();
  for (const r of Array.from(el.children)) {
    if (r.dataset.key !== undefined) have.set(r.dataset.key, r);
    else r.remove();
  }
  s.jobs.forEach((j, i) => {
    let r = have.get(j.name);
    have.delete(j.name);
    if (!r) {
      r = document.createElement("tr");
      r.dataset.key = j.name;
      const th = document.createElement("th");
      th.scope = "row";
      const a = document.createElement("a");
      a.href = jobLink(j);
      a.textContent = j.name;
      th.append(a);
      const td = document.createElement("td");
      td.className = "cells";
      r.append(th, td);
    }
    const runs = j.runs || [];
    const sig = runs.map((x) => x.key + "=" + x.state).join(" ");
    if (r.dataset.sig !== sig) {
      r.dataset.sig = sig;
      const cells = runs.map((x) => {
        const a = document.createElement("a");
        a.className = "cell";
        a.dataset.state = x.state;
        a.href = jobLink(j) + "#run-" + x.key; // keys are letters, digits and -:.+
        a.title = x.key + ": " + x.state;
        a.setAttribute("aria-label", "run " + x.key + ": " + x.state);
        return a;
      });
      if (!cells.length) {
        const none = document.createElement("span");
        none.className = "hint";
        none.textContent = "no runs yet";
        cells.push(none);
      }
      r.lastElementChild.replaceChildren(...cells);
    }
    if (el.children[i] !== r) el.insertBefore(r, el.children[i] || null);
  });
  for (const r of have.values()) r.remove();
  if (!s.jobs.length) {
    const r = document.createElement("tr");
    const td = document.createElement("td");
    td.textContent = el.dataset.empty || "";
    r.append(td);
    el.append(r);
  }
}

// secs and perSecond render a duration in seconds and a rate for people,
// as the server's templates do (secs, perSecond in ui.go).
function secs(x) {
  if (x === undefined || x === null) return "";
  if (x < 1) return Math.round(x * 1000) + "ms";
  if (x < 60) return (Math.round(x * 10) / 10) + "s";
  const m = Math.floor(x / 60);
  return m + "m" + Math.round(x - m * 60) + "s";
}

function perSecond(x) {
  if (!x) return "0/s";
  return (x < 10 ? Math.round(x * 10) / 10 : Math.round(x).toLocaleString("en")) + "/s";
}

// tintStates marks every state cell with its state (data-state), which
// the stylesheet colours; run after every change of the page.
function tintStates() {
  for (const el of document.querySelectorAll(".state")) {
    const st = el.textContent.trim();
    if (el.dataset.state !== st) el.dataset.state = st;
  }
}

// refreshOwnAlerts keeps a task or job page's own alerts as the monitor
// has them: the list the server renders (template "ownalerts"), rebuilt
// from GET /api/v1/alerts as text nodes.
async function refreshOwnAlerts() {
  const sec = document.querySelector("section.own-alerts[data-label]");
  const body = sec && sec.querySelector(".own-body");
  if (!body) return;
  let board;
  try {
    ({data: board} = await api("GET", "/api/v1/alerts"));
  } catch (e) {
    return; // the next event tries again
  }
  const own = (board.alerts || []).filter((a) => a.state === "firing" && a.labels && a.labels[sec.dataset.label] === sec.dataset.name);
  const sig = JSON.stringify([own, board.error || "", board.monitor || ""]);
  if (body.dataset.sig === sig) return;
  body.dataset.sig = sig;
  const text = (tag, s, cls) => { const el = document.createElement(tag); el.textContent = s; if (cls) el.className = cls; return el; };
  const out = [];
  if (own.length) {
    const ul = document.createElement("ul");
    for (const a of own) {
      const li = document.createElement("li");
      li.className = "sev-" + a.severity;
      li.append(text("strong", a.severity), " " + a.rule + ": " + a.summary);
      if (a.fix) li.append(" — ", text("em", a.fix));
      const at = a.firedAt && !a.firedAt.startsWith("0001") ? a.firedAt : a.since;
      li.append(" · firing since " + utc(at) + (a.silenced || a.silencedBy ? " · silenced" : ""));
      ul.append(li);
    }
    const p = document.createElement("p");
    const link = text("a", "All alerts and silences");
    link.href = "/alerts";
    p.append(link);
    out.push(ul, p);
  } else if (board.error) {
    out.push(text("p", "Alerts could not be read: " + board.error, "err"));
  } else {
    out.push(text("p", "No alert firing" + (board.monitor ? "" : " (no monitor has evaluated yet)") + ".", "hint"));
  }
  body.replaceChildren(...out);
}

// showBanner shows the critical-alert banner the server worded, or hides
// it when there is none.
function showBanner(a) {
  const banner = document.getElementById("alert-banner");
  if (!banner || !a) return;
  const text = document.getElementById("alert-banner-text");
  if (text.textContent !== a.text) text.textContent = a.text;
  banner.classList.toggle("unknown", !!a.unknown);
  banner.hidden = !a.text;
}

function liveUpdates() {
  if (document.body.dataset.live !== "on" || !window.EventSource) return;
  const status = document.getElementById("live-status");
  const es = new EventSource("/api/v1/events");
  es.onopen = () => { if (status) status.textContent = "live"; };
  es.onerror = () => { if (status) status.textContent = "live updates reconnecting…"; };
  // The stream sends the whole summary first (and after a gap), then
  // what changed: each delta is applied to the summary held here, and
  // the page follows the summary either way.
  let held = null;
  es.addEventListener("snapshot", (ev) => { held = JSON.parse(ev.data); show(held); });
  es.addEventListener("delta", (ev) => {
    if (!held) return; // never before a snapshot: the server sends one first
    const d = JSON.parse(ev.data);
    held = {readAt: d.readAt, errors: d.errors, alerts: d.alerts,
      tasks: applyDelta(held.tasks, d.tasks), jobs: applyDelta(held.jobs, d.jobs), collectors: applyDelta(held.collectors, d.collectors)};
    show(held);
  });
  const show = (s) => {
    const readAt = document.getElementById("readAt");
    if (readAt) readAt.textContent = s.readAt.replace("T", " ").replace(/\.\d+Z$/, "Z");
    syncLists(s);
    syncGrid(s);
    if (status) {
      const bad = Object.keys(s.errors || {}).map((k) => "could not read " + k + ": " + s.errors[k]);
      status.textContent = bad.length ? "live; " + bad.join("; ") : "live";
    }
    for (const t of s.tasks) {
      for (const k of ["state", "desired", "owner", "position", "lag", "error", "copy"]) setField("task", t.name, k, t[k]);
      // A start: snapshot task's copy: its bar and words, while there is one.
      const copy = document.getElementById("task-copy");
      if (copy && copy.dataset.task === t.name) {
        copy.hidden = !t.copy;
        const bar = document.getElementById("task-copy-bar");
        const pc = t.copyPercent ?? 0; // omitted when 0
        if (pc >= 0) bar.value = pc; else bar.removeAttribute("value");
      }
      // A task page's buttons show only the actions that apply now.
      for (const b of document.querySelectorAll("[data-applies]")) {
        if (b.dataset.task === t.name) b.hidden = !(t.actions || []).includes(b.dataset.applies);
      }
    }
    // A task page whose task has left the snapshot (after being in it:
    // a task just created may not be in it yet) says so.
    const page = document.getElementById("instances");
    if (page && !(s.errors && s.errors.tasks)) {
      const there = s.tasks.some((t) => t.name === page.dataset.task);
      if (!there && page.dataset.seen) flash("Task " + page.dataset.task + " no longer exists: it was deleted.", true);
      if (there) page.dataset.seen = "yes";
    }
    for (const j of s.jobs) {
      setField("job", j.name, "paused", j.paused);
      setField("job", j.name, "running", j.running ? "running" : "");
      setField("job", j.name, "lastRun", j.lastRun);
      setField("job", j.name, "lastState", j.lastState);
    }
    for (const c of s.collectors) {
      setField("collector", c.name, "alive", c.alive ? "alive" : "dead");
      setField("collector", c.name, "lines", c.lines);
    }
    showBanner(s.alerts);
    refreshOwnAlerts();
    tintStates();
    refreshTables().then(tintStates);
    document.dispatchEvent(new CustomEvent("shepherd:snapshot")); // plots.js
  };
}

// applyDelta returns list (entries with a name, in name order) with the
// entries of d.set put in place of those of the same name or added, and
// those named in d.del removed.
function applyDelta(list, d) {
  const byName = new Map(list.map((e) => [e.name, e]));
  for (const e of d.set || []) byName.set(e.name, e);
  for (const n of d.del || []) byName.delete(n);
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

document.addEventListener("DOMContentLoaded", () => {
  tintStates();
  wireActions();
  wireTaskForm();
  wireJobForm();
  liveUpdates();
});
