/* global document, window, location, history, sessionStorage, fetch, setTimeout, clearTimeout, AbortController, URLSearchParams, URL, TextDecoderStream, Node, FormData, performance, CSS, Element */
// The operator console (served at /console, and at /console/tasks/{id} for one task): a task list paged
// through a keyset cursor and a task page, both live. Plain browser JavaScript, no framework and no build
// step; every request carries the API key the operator entered (kept for this tab only), or, signed in through
// the identity provider, the session cookie the browser keeps and the session's CSRF token. Data is only ever
// put into the page as text, never as HTML. Every control has a label and works from the keyboard.

/**
 * The diagrams (and dagre under them) load only when a task page needs them, or once the list is on screen:
 * a static import would put two more sequential script fetches before the list's first request.
 */
let diagramModule;
const diagrams = () => (diagramModule ??= import("/console/assets/console-diagram.js"));

performance.mark("console-start"); // for bench/console-paging.ts: the script runs
const STATES = [
  "submitted",
  "working",
  "input-required",
  "auth-required",
  "completed",
  "failed",
  "canceled",
  "rejected",
];
const PAGE_SIZE = 50;
const view = document.getElementById("view");
const errorBox = document.getElementById("error");
const liveDot = document.getElementById("live");

/**
 * The indicator in the header says what the page's live stream is doing, in words (its title says more):
 * "live" while updates arrive; "ended" when a task finished and its stream closed, as it does after the
 * last event (nothing is wrong: no more updates will come); "disconnected" when the stream failed.
 */
const LIVE = {
  live: ["● live", "Live: changes appear as they happen."],
  ended: [
    "● ended",
    "This task has finished: its event stream closed after the last event, so no more updates will come.",
  ],
  lost: ["● disconnected", "Live updates stopped: the stream to the host failed. Reload the page to reconnect."],
};
function setLive(state, detail) {
  const [text, title] = LIVE[state];
  liveDot.textContent = text;
  liveDot.title = detail ? `${title} (${detail})` : title;
  liveDot.className = `live ${state}`;
  liveDot.dataset.live = state;
}
let machineLayout;
const workflowLayouts = new Map();
/** Aborted when the view changes: stops the streams the previous view opened. */
let viewScope = new AbortController();

// ------------------------------------------------------------------ requests

function apiKey() {
  return sessionStorage.getItem("openwop-console-key") ?? "";
}

/** The signed-in session's CSRF token (from /console/auth/session): sent on every call the cookie authenticates. */
let csrfToken = "";

function headers(extra = {}) {
  const key = apiKey();
  return { ...(key ? { authorization: `Bearer ${key}` } : csrfToken ? { "x-csrf-token": csrfToken } : {}), ...extra };
}

/** Whether the host offers sign-in through its identity provider, and whether this browser is signed in. */
async function loadSession() {
  const signInLink = document.getElementById("sign-in");
  const signedIn = document.getElementById("signed-in");
  const signOut = document.getElementById("sign-out");
  let session = { signIn: null, signedIn: false };
  try {
    const res = await fetch("/console/auth/session", { headers: { accept: "application/json" } });
    if (res.ok) session = await res.json();
  } catch {
    // An older host without the route: API keys only.
  }
  csrfToken = session.signedIn ? session.csrfToken : "";
  if (session.signIn) {
    signInLink.textContent = `Sign in with ${new URL(session.signIn.issuer).host}`;
    signInLink.href = session.signIn.loginUrl;
  }
  signInLink.hidden = !session.signIn || session.signedIn;
  signedIn.hidden = !session.signedIn;
  signedIn.textContent = session.signedIn ? `Signed in · tenant ${session.tenant}` : "";
  signOut.hidden = !session.signedIn;
}

class ApiError extends Error {
  constructor(status, body) {
    super(typeof body === "object" && body ? `${body.error}: ${body.message}` : `${status} ${body}`);
    this.status = status;
    this.body = body;
  }
}

async function api(path, init = {}) {
  const res = await fetch(path, { ...init, headers: headers(init.headers) });
  const body = res.headers.get("content-type")?.includes("json") ? await res.json() : await res.text();
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

function postJson(path, body) {
  return api(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
}

/** Server-sent events over fetch (EventSource cannot send the Authorization header). */
async function stream(path, signal, onMessage) {
  const res = await fetch(path, { headers: headers({ accept: "text/event-stream" }), signal });
  if (!res.ok || !res.body) throw new Error(`${path}: ${res.status}`);
  setLive("live");
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
        }
        if (data.length > 0) onMessage(event, JSON.parse(data.join("\n")));
      }
    }
  } finally {
    reader.releaseLock();
  }
}

let errorTimer;
function showError(err) {
  if (err?.name === "AbortError") return;
  errorBox.textContent = String(err?.message ?? err);
  errorBox.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(clearError, 8000);
}

/** A new view (another key, a sign-in, a navigation) starts without the previous one's error. */
function clearError() {
  clearTimeout(errorTimer);
  errorBox.hidden = true;
  errorBox.textContent = "";
}

// ------------------------------------------------------------------ DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false || value === null) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "value") node.value = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat())
    if (child !== undefined && child !== null && child !== false)
      node.append(child instanceof Node ? child : String(child));
  return node;
}

const badge = (state) => el("span", { class: `badge ${state}`, "data-a2a-state": state }, state);
const pad = (n) => String(n).padStart(2, "0");
/**
 * Local time as HH:MM:SS (the full instant is in the cell's title). Not toLocaleTimeString / Intl: in a fresh
 * page the first call loads the locale data, which measured 80–100 ms before the first rows could show
 * (bench/console-paging.ts).
 */
function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
const taskHref = (id) => `/console/tasks/${encodeURIComponent(id)}`;

/** "3 s", "4 min", "2 h", "5 d". */
function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

const ageOf = (task) => duration(Date.now() - Date.parse(task.createdAt));

/** An ISO instant as the value of a datetime-local input (local time), and back. */
function toLocalInput(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * A modal confirmation (a native <dialog>: focus stays inside, Escape cancels). Resolves to
 * { ok, reason } — `reason` when asked for one.
 */
function confirmDialog({ title, message, confirmLabel, danger = true, reason = false }) {
  return new Promise((resolve) => {
    const reasonInput = reason ? el("textarea", { id: "confirm-reason", rows: 2, placeholder: "optional" }) : undefined;
    const dialog = el("dialog", {
      id: "confirm",
      class: "confirm",
      "aria-labelledby": "confirm-title",
      "aria-describedby": "confirm-message",
    });
    const finish = (ok) => {
      const value = { ok, ...(reasonInput && reasonInput.value.trim() ? { reason: reasonInput.value.trim() } : {}) };
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    dialog.append(
      el("h2", { id: "confirm-title" }, title),
      el("p", { id: "confirm-message" }, message),
      reasonInput ? el("label", { for: "confirm-reason", class: "block" }, "Reason", reasonInput) : "",
      el(
        "div",
        { class: "actions" },
        el("button", { type: "button", class: "secondary", id: "confirm-no", onclick: () => finish(false) }, "Keep it"),
        el(
          "button",
          { type: "button", class: danger ? "danger" : "", id: "confirm-yes", onclick: () => finish(true) },
          confirmLabel,
        ),
      ),
    );
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      finish(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector("#confirm-no").focus();
  });
}

// ------------------------------------------------------------------ task list

const FILTERS = ["q", "state", "skill", "tenant", "contextId", "createdFrom", "createdTo", "updatedFrom", "updatedTo"];

async function showList(params) {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, params.get(name) ?? ""]));
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  const signal = viewScope.signal;
  const started = performance.now();
  const first = await api(`/console/api/tasks?${query}&limit=${PAGE_SIZE}`);
  performance.mark("console-api"); // for bench/console-paging.ts: the first page's answer is read
  const rows = new Map();
  const selected = new Set();
  let nextCursor = first.nextCursor;
  let total = first.total;
  const counts = { ...(first.counts ?? {}) };

  const tbody = el("tbody");
  const table = el("table", { id: "tasks", "aria-label": "Tasks", "data-loaded": 0 });
  const countBar = el("nav", { class: "counts", "aria-label": "Tasks per state" });
  const status = el("p", { id: "list-status", class: "muted", role: "status" });
  const bulkStatus = el("p", { id: "bulk-status", class: "muted", role: "status" });
  const loadMore = el(
    "button",
    { type: "button", id: "load-more", class: "secondary", onclick: () => void more() },
    "Load more",
  );
  const selectAll = el("input", { type: "checkbox", id: "select-all", "aria-label": "Select every task on the list" });
  const cancelSelected = el(
    "button",
    { type: "button", id: "bulk-cancel", class: "danger", disabled: true, onclick: () => void bulk("cancel") },
    "Cancel selected…",
  );
  const retrySelected = el(
    "button",
    { type: "button", id: "bulk-retry", class: "secondary", disabled: true, onclick: () => void bulk("retry") },
    "Retry pushes of selected…",
  );

  const matches = (t) =>
    (!filters.state || t.a2aState === filters.state) &&
    (!filters.skill || t.workflowId === filters.skill) &&
    (!filters.tenant || t.tenant === filters.tenant) &&
    (!filters.contextId || t.contextId === filters.contextId) &&
    (!filters.q || t.taskId.startsWith(filters.q)) &&
    (!filters.createdFrom || t.createdAt >= filters.createdFrom) &&
    (!filters.createdTo || t.createdAt < filters.createdTo) &&
    (!filters.updatedFrom || t.updatedAt >= filters.updatedFrom) &&
    (!filters.updatedTo || t.updatedAt < filters.updatedTo);

  const rowOf = (t) => {
    const box = el("input", {
      type: "checkbox",
      class: "select",
      "aria-label": `Select ${t.title}`,
      checked: selected.has(t.taskId),
      onchange: (e) => {
        if (e.target.checked) selected.add(t.taskId);
        else selected.delete(t.taskId);
        updateSelection();
      },
    });
    return el(
      "tr",
      { "data-task-id": t.taskId, "data-status": t.status },
      el("td", {}, box),
      el(
        "td",
        { class: "title" },
        el("a", { href: taskHref(t.taskId), "data-nav": "" }, t.title),
        el("div", { class: "mono muted small" }, t.taskId),
      ),
      el("td", {}, badge(t.a2aState), el("div", { class: "mono muted small" }, t.status)),
      el(
        "td",
        { class: "node" },
        t.currentNode
          ? el("span", { title: `${t.currentNode.kind} node ${t.currentNode.id}` }, t.currentNode.title)
          : el("span", { class: "muted" }, "—"),
      ),
      el(
        "td",
        { class: "waiting" },
        t.waitingFor
          ? el("span", { class: `waits ${t.waitingFor.kind}`, "data-waiting": t.waitingFor.kind }, t.waitingFor.label)
          : t.blocked
            ? el("span", { class: "waits blocked", "data-waiting": "blocked", title: t.blocked.reason }, "blocked")
            : "",
      ),
      el("td", { title: t.workflowVersion ? `version ${t.workflowVersion}` : "" }, t.workflowId),
      el("td", {}, t.tenant),
      el("td", { title: t.createdAt }, ageOf(t)),
      el("td", { title: t.updatedAt }, time(t.updatedAt)),
    );
  };

  const renderCounts = () => {
    const link = (state, label, n) => {
      const next = new URLSearchParams(query);
      if (state) next.set("state", state);
      else next.delete("state");
      const current = (filters.state || "") === state;
      return el(
        "a",
        {
          href: `/console?${next}`,
          "data-nav": "",
          "data-count-state": state || "any",
          class: current ? "count current" : "count",
          "aria-current": current ? "true" : undefined,
        },
        label,
        " ",
        el("span", { class: "n" }, n ?? 0),
      );
    };
    const all = Object.values(counts).reduce((a, b) => a + b, 0);
    countBar.replaceChildren(
      link("", "all", all),
      ...STATES.filter((s) => counts[s]).map((s) => link(s, s, counts[s])),
    );
  };

  const renderStatus = () => {
    status.textContent = `Showing ${rows.size} of ${total} task${total === 1 ? "" : "s"}${nextCursor ? "" : " (all loaded)"}`;
    loadMore.hidden = !nextCursor;
    table.setAttribute("data-loaded", String(rows.size));
  };

  const updateSelection = () => {
    cancelSelected.disabled = retrySelected.disabled = selected.size === 0;
    cancelSelected.textContent = `Cancel selected (${selected.size})…`;
    retrySelected.textContent = `Retry pushes of selected (${selected.size})…`;
    selectAll.checked = selected.size > 0 && selected.size === rows.size;
  };

  const append = (tasks) => {
    const fragment = document.createDocumentFragment();
    for (const t of tasks) {
      if (rows.has(t.taskId)) continue; // already here through the live stream
      rows.set(t.taskId, t);
      fragment.append(rowOf(t));
    }
    tbody.querySelector("tr.empty")?.remove();
    tbody.append(fragment);
    if (rows.size === 0)
      tbody.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: 9, class: "muted" }, "No tasks match.")));
    renderStatus();
  };

  let loading;
  async function more() {
    if (!nextCursor || loading) return;
    loadMore.disabled = true;
    loadMore.textContent = "Loading…";
    const t0 = performance.now();
    try {
      loading = api(`/console/api/tasks?${query}&limit=${PAGE_SIZE}&cursor=${encodeURIComponent(nextCursor)}`);
      const page = await loading;
      nextCursor = page.nextCursor;
      append(page.tasks);
      table.setAttribute("data-last-page-ms", String(Math.round(performance.now() - t0)));
    } catch (err) {
      showError(err);
    } finally {
      loading = undefined;
      loadMore.disabled = false;
      loadMore.textContent = "Load more";
    }
  }

  async function bulk(action) {
    const ids = [...selected];
    const what = action === "cancel" ? "Cancel" : "Retry the pushes of";
    const answer = await confirmDialog({
      title: `${what} ${ids.length} task${ids.length === 1 ? "" : "s"}?`,
      message:
        action === "cancel"
          ? "Each selected task that is still running or waiting is cancelled. This cannot be undone."
          : "Every push config of the selected tasks that has something left to deliver is retried now.",
      confirmLabel: action === "cancel" ? `Cancel ${ids.length} task${ids.length === 1 ? "" : "s"}` : "Retry now",
      danger: action === "cancel",
      reason: action === "cancel",
    });
    if (!answer.ok) return;
    try {
      const { results } = await postJson(
        action === "cancel" ? "/console/api/bulk/cancel" : "/console/api/bulk/retry-push",
        { taskIds: ids, ...(answer.reason ? { reason: answer.reason } : {}) },
      );
      const failed = results.filter((r) => !r.ok);
      bulkStatus.textContent =
        `${action === "cancel" ? "Cancelled" : "Retried"} ${results.length - failed.length} of ${results.length}.` +
        (failed.length
          ? ` Not done: ${failed.map((r) => `${r.taskId.slice(0, 8)} (${r.error.message})`).join("; ")}`
          : "");
      selected.clear();
      for (const box of tbody.querySelectorAll("input.select")) box.checked = false;
      updateSelection();
    } catch (err) {
      showError(err);
    }
  }

  selectAll.addEventListener("change", () => {
    for (const [id] of rows) {
      if (selectAll.checked) selected.add(id);
      else selected.delete(id);
    }
    for (const box of tbody.querySelectorAll("input.select")) box.checked = selectAll.checked;
    updateSelection();
  });

  const field = (id, label, input) => el("label", { for: id }, label, input);
  const text = (name, placeholder) => el("input", { id: `f-${name}`, name, value: filters[name], placeholder });
  const when = (name) =>
    el("input", { id: `f-${name}`, name, type: "datetime-local", value: toLocalInput(filters[name]) });
  const form = el(
    "form",
    {
      class: "filters",
      "aria-label": "Filter tasks",
      onsubmit: (e) => {
        e.preventDefault();
        const next = new URLSearchParams();
        for (const [name, value] of new FormData(form)) {
          if (!value) continue;
          next.set(
            name,
            name.endsWith("From") || name.endsWith("To") ? new Date(String(value)).toISOString() : String(value),
          );
        }
        navigate(`/console${next.size ? `?${next}` : ""}`);
      },
    },
    field("f-q", "Task id", text("q", "id or prefix")),
    field(
      "f-state",
      "State",
      el(
        "select",
        { id: "f-state", name: "state" },
        el("option", { value: "" }, "any"),
        STATES.map((s) => el("option", { value: s, selected: s === filters.state }, s)),
      ),
    ),
    field("f-skill", "Skill", text("skill", "workflow id")),
    first.tenants.length > 1
      ? field(
          "f-tenant",
          "Tenant",
          el(
            "select",
            { id: "f-tenant", name: "tenant" },
            el("option", { value: "" }, "all"),
            first.tenants.map((t) => el("option", { value: t, selected: t === filters.tenant }, t)),
          ),
        )
      : "",
    field("f-contextId", "Context", text("contextId", "context id")),
    field("f-createdFrom", "Created from", when("createdFrom")),
    field("f-createdTo", "Created before", when("createdTo")),
    field("f-updatedFrom", "Updated from", when("updatedFrom")),
    field("f-updatedTo", "Updated before", when("updatedTo")),
    el("button", { type: "submit" }, "Filter"),
    el("a", { href: "/console", "data-nav": "", class: "reset" }, "Reset"),
  );
  table.append(
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        el("th", {}, selectAll),
        ["Task", "State", "Current node", "Waiting for", "Skill", "Tenant", "Age", "Updated"].map((h) =>
          el("th", { scope: "col" }, h),
        ),
      ),
    ),
    tbody,
  );
  view.replaceChildren(
    el("section", { class: "panel" }, el("h1", {}, "Tasks"), form, countBar),
    el(
      "section",
      { class: "panel" },
      el("div", { class: "toolbar" }, cancelSelected, retrySelected, bulkStatus),
      el("div", { class: "table-wrap" }, table),
      el("div", { class: "pager" }, status, loadMore),
    ),
  );
  renderCounts();
  append(first.tasks);
  updateSelection();
  table.setAttribute("data-first-page-ms", String(Math.round(performance.now() - started)));
  performance.mark("console-rows"); // for bench/console-paging.ts: when the first rows are in the table
  diagrams().catch(() => undefined); // ready for the first task opened from the list

  stream("/console/api/tasks/stream", signal, (event, summary) => {
    if (event !== "message") return;
    const before = rows.get(summary.taskId);
    if (!before && !matches(summary)) return;
    if (before && before.a2aState !== summary.a2aState) {
      counts[before.a2aState] = Math.max(0, (counts[before.a2aState] ?? 1) - 1);
      counts[summary.a2aState] = (counts[summary.a2aState] ?? 0) + 1;
    } else if (!before) {
      counts[summary.a2aState] = (counts[summary.a2aState] ?? 0) + 1;
      total += 1;
    }
    rows.set(summary.taskId, summary);
    tbody.querySelector(`tr[data-task-id="${CSS.escape(summary.taskId)}"]`)?.remove();
    tbody.querySelector("tr.empty")?.remove();
    // The newest update goes first: the list's own order.
    tbody.prepend(rowOf(summary));
    renderCounts();
    renderStatus();
  }).then(() => {
    // The list's stream has no last event: it closed because the host went away (a restart, a deploy).
    if (!signal.aborted) setLive("lost", "the host closed the stream");
  }, streamFailed);
}

// ------------------------------------------------------------------ task page

async function showTask(taskId) {
  const { drawMachine, layoutMachine, drawWorkflow, layoutWorkflow } = await diagrams();
  machineLayout ??= layoutMachine(await api("/console/api/machine"));
  const signal = viewScope.signal;
  const diagram = el("div", { class: "diagram", id: "diagram" });
  const wfDiagram = el("div", { class: "diagram", id: "workflow-graph" });
  const head = el("div", { class: "task-head" });
  const interruptBox = el("section", { id: "interrupt", "aria-live": "polite" });
  const timeline = el("ol", { id: "event-log", class: "timeline" });
  const historyBox = el("div", { id: "history" });
  const artifactsBox = el("div", { id: "artifacts" });
  const pushBox = el("div", { id: "push" });
  const timelineToggle = el(
    "button",
    {
      type: "button",
      class: "secondary small",
      id: "expand-all",
      onclick: () => {
        const open = timelineToggle.getAttribute("aria-pressed") !== "true";
        timelineToggle.setAttribute("aria-pressed", String(open));
        timelineToggle.textContent = open ? "Collapse all" : "Expand all";
        for (const d of timeline.querySelectorAll("details")) d.open = open;
      },
    },
    "Expand all",
  );
  view.replaceChildren(
    el("section", { class: "panel" }, head),
    interruptBox,
    el(
      "div",
      { class: "diagrams" },
      el(
        "section",
        { class: "panel" },
        el("h2", { id: "wf-title" }, "Workflow"),
        wfDiagram,
        el(
          "div",
          { class: "legend" },
          el("span", { class: "sw sw-current" }),
          "current node",
          el("span", { class: "sw sw-visited" }),
          "visited",
          el("span", { class: "sw sw-taken" }),
          "path taken",
          el("span", { class: "sw sw-remote" }),
          "remote (a2a.invoke)",
        ),
      ),
      el(
        "section",
        { class: "panel" },
        el("h2", {}, "State machine"),
        diagram,
        el(
          "div",
          { class: "legend" },
          el("span", { class: "sw sw-current" }),
          "current",
          el("span", { class: "sw sw-visited" }),
          "visited",
          el("span", { class: "sw sw-taken" }),
          "transition taken",
        ),
      ),
    ),
    el(
      "div",
      { class: "grid" },
      el(
        "div",
        {},
        el(
          "section",
          { class: "panel" },
          el("h2", {}, "Timeline ", el("span", { class: "muted", id: "event-count" }), " ", timelineToggle),
          el("div", { class: "log" }, timeline),
        ),
      ),
      el(
        "div",
        {},
        el("section", { class: "panel" }, el("h2", {}, "History"), historyBox),
        el("section", { class: "panel" }, el("h2", {}, "Artifacts"), artifactsBox),
        el("section", { class: "panel" }, el("h2", {}, "Push notifications"), pushBox),
      ),
    ),
  );

  let detail;
  let workflow;
  let lastSequence = -1;
  let lastTime;
  const addEvent = (e) => {
    if (e.sequence <= lastSequence) return;
    lastSequence = e.sequence;
    const since = lastTime ? Date.parse(e.timestamp) - lastTime : undefined;
    lastTime = Date.parse(e.timestamp);
    const notes = [];
    if (e.type === "node.started" && e.payload?.attempt !== undefined)
      notes.push(el("span", { class: e.payload.attempt > 1 ? "note retry" : "note" }, `attempt ${e.payload.attempt}`));
    if (e.type === "node.interrupted")
      notes.push(
        el(
          "span",
          { class: "note retry" },
          e.payload?.charged === false
            ? "died with its instance, not run alone: not charged, runs again alone"
            : `died with its instance while alone: ${e.payload?.crashes ?? "?"} of RECOVERY_MAX_ATTEMPTS`,
        ),
      );
    if (e.type === "interrupt.resolved") {
      const value = e.payload?.resumeValue ?? {};
      const what =
        value.action ??
        (Array.isArray(value.answers)
          ? `answers ${value.answers.map((a) => `${a.id}=${JSON.stringify(a.answer)}`).join(", ")}`
          : JSON.stringify(value));
      notes.push(
        el(
          "span",
          { class: "note decision", "data-decided-by": e.payload?.resolvedBy ?? "" },
          `decided by ${e.payload?.resolvedBy ?? "?"}: ${what}`,
        ),
      );
    }
    if (e.type === "interrupt.exchange")
      notes.push(el("span", { class: "note" }, `asked by ${e.payload?.askedBy ?? "?"}: ${e.payload?.question ?? ""}`));
    if (e.type === "run.cancelling") notes.push(el("span", { class: "note" }, `by ${e.payload?.cancelledBy ?? "?"}`));
    // Operator actions name who acted (and why, when they said).
    const actor = {
      "run.paused": "pausedBy",
      "run.resumed": "resumedBy",
      "openwop-a2a-host.run.retried": "retriedBy",
      "openwop-a2a-host.run.restarted": "restartedBy",
    }[e.type];
    if (actor)
      notes.push(
        el(
          "span",
          { class: "note steer", "data-acted-by": e.payload?.[actor] ?? "" },
          `by ${e.payload?.[actor] ?? "?"}${e.payload?.reason ? `: ${e.payload.reason}` : ""}`,
        ),
      );
    timeline.append(
      el(
        "li",
        { "data-type": e.type, "data-sequence": e.sequence },
        el(
          "details",
          {},
          el(
            "summary",
            {},
            el("span", { class: "seq" }, `#${e.sequence}`),
            " ",
            el("span", { class: "mono type" }, e.type),
            " ",
            e.nodeId ? el("span", { class: "mono node" }, e.nodeId) : "",
            " ",
            el(
              "span",
              { class: "muted since", title: e.timestamp },
              since === undefined ? time(e.timestamp) : `+${duration(since)}`,
            ),
            " ",
            notes,
          ),
          el("pre", { class: "payload" }, JSON.stringify(e.payload ?? {}, null, 2)),
        ),
      ),
    );
    document.getElementById("event-count").textContent = `(${lastSequence + 1})`;
  };

  const render = () => {
    const t = detail.task;
    const cancellable = !["completed", "failed", "cancelled", "cancelling"].includes(t.status);
    document.title = `${t.title} · operator console`;
    head.replaceChildren(
      el(
        "div",
        { class: "title-line" },
        el("h1", { id: "task-title" }, t.title),
        badge(t.a2aState),
        el("span", { class: "mono", id: "machine-state", "data-status": t.status }, t.status),
        t.waitingFor
          ? el("span", { class: `waits ${t.waitingFor.kind}`, id: "waiting-for" }, `waits for ${t.waitingFor.label}`)
          : "",
        t.blocked
          ? el(
              "span",
              { class: "waits blocked", id: "blocked", title: t.blocked.reason },
              `blocked: ${t.blocked.reason}`,
            )
          : "",
      ),
      el(
        "div",
        { class: "meta" },
        el("span", { class: "mono", id: "task-id" }, t.taskId),
        ` · skill ${t.workflowId}`,
        t.workflowVersion
          ? el("span", { class: "mono", id: "workflow-version" }, ` (workflow version ${t.workflowVersion})`)
          : "",
        ` · tenant ${t.tenant} · context `,
        el("span", { class: "mono" }, t.contextId),
        ` · v${t.version} · age ${ageOf(t)}`,
        detail.currentNode ? ` · at node ${detail.currentNode.title}` : "",
      ),
      // The run error of a failed task (e.g. poison_exhausted: which node killed its instance, how often).
      detail.error
        ? el(
            "p",
            { class: "field-error", id: "run-error", role: "status" },
            `${detail.error.code}${detail.error.nodeId ? ` at node ${detail.error.nodeId}` : ""}: ${detail.error.message}`,
          )
        : "",
      el(
        "div",
        { class: "head-actions" },
        el("a", { href: "/console", "data-nav": "" }, "← all tasks"),
        el("a", { href: taskHref(t.taskId), id: "permalink" }, "Link to this task"),
        ...steerControls(t),
        el(
          "button",
          { type: "button", class: "danger", id: "cancel", disabled: !cancellable, onclick: () => void cancelTask() },
          "Cancel task…",
        ),
      ),
    );
    diagram.replaceChildren(drawMachine(machineLayout, t.status, detail.path, t.a2aState));
    if (workflow) {
      const ended = ["completed"].includes(t.status);
      const outcome = ["completed", "failed", "cancelled"].includes(t.status) ? t.a2aState : undefined;
      // A task that failed or was cancelled stopped at the last node it entered.
      const current = ended ? "$end" : (detail.currentNode?.id ?? (outcome ? detail.nodePath.at(-1) : undefined));
      wfDiagram.replaceChildren(
        drawWorkflow(workflow.layout, {
          current,
          path: ended ? [...detail.nodePath, "$end"] : detail.nodePath,
          remote: detail.remote,
          outcome,
        }),
      );
    }
    renderInterrupt();
    historyBox.replaceChildren(
      ...(detail.history.length
        ? detail.history.map((m) =>
            el("div", { class: "message" }, el("span", { class: "role" }, m.role), partsView(m.parts)),
          )
        : [el("p", { class: "muted" }, "None.")]),
    );
    artifactsBox.replaceChildren(
      ...(detail.artifacts.length ? detail.artifacts.map(artifactView) : [el("p", { class: "muted" }, "None yet.")]),
    );
  };

  // Steering (docs/operating.md "Steering a task"): pause / resume, retry the failed node, restart from a node reached.
  const steerControls = (t) => {
    const pausable = ["pending", "running", "waiting-approval", "waiting-input", "waiting-external"].includes(t.status);
    const restartable = ["paused", "failed", "waiting-approval", "waiting-input", "waiting-external"].includes(
      t.status,
    );
    const reached = [...new Set(detail.nodePath.filter((id) => id !== "$end"))];
    const controls = [];
    if (pausable)
      controls.push(
        el("button", { type: "button", id: "pause", onclick: () => void steer("pause", "Pause this task?") }, "Pause…"),
      );
    if (t.status === "paused")
      controls.push(
        el(
          "button",
          { type: "button", id: "resume", onclick: () => void steer("resume", "Resume this task?") },
          "Resume…",
        ),
      );
    if (t.status === "failed" && detail.error?.nodeId)
      controls.push(
        el(
          "button",
          { type: "button", id: "retry", onclick: () => void steer("retry", `Retry node ${detail.error.nodeId}?`) },
          "Retry failed node…",
        ),
      );
    if (restartable && reached.length > 0) {
      const select = el(
        "select",
        { id: "restart-node", "aria-label": "Node to restart from" },
        ...reached.map((id) => el("option", { value: id }, id)),
      );
      controls.push(
        select,
        el(
          "button",
          {
            type: "button",
            id: "restart",
            onclick: () => void steer("restart", `Restart from node ${select.value}?`, { nodeId: select.value }),
          },
          "Restart from node…",
        ),
      );
    }
    // Move to another version of the workflow (docs/workflows.md "Changing a workflow"), mapping the current node.
    const targets = workflow
      ? [workflow.graph.deployedVersion, ...workflow.graph.versions.map((v) => v.version)].filter(
          (v, i, all) => v && v !== t.workflowVersion && all.indexOf(v) === i,
        )
      : [];
    const current = detail.currentNode?.id;
    if (
      ["paused", "waiting-approval", "waiting-input", "waiting-external"].includes(t.status) &&
      current &&
      targets.length
    ) {
      const version = el(
        "select",
        { id: "move-version", "aria-label": "Version to move to" },
        ...targets.map((v) => el("option", { value: v }, v)),
      );
      const node = el("input", {
        id: "move-node",
        "aria-label": `Node of that version for ${current}`,
        value: current,
      });
      controls.push(
        version,
        node,
        el(
          "button",
          {
            type: "button",
            id: "move",
            onclick: () =>
              void steer("move", `Move to version ${version.value}, at node ${node.value}?`, {
                toVersion: version.value,
                nodes: { [current]: node.value },
              }),
          },
          "Move to version…",
        ),
      );
    }
    return controls;
  };

  async function steer(action, title, body = {}) {
    const answer = await confirmDialog({
      title,
      message:
        action === "pause"
          ? "It runs no node, fires no timer and takes no reply until resumed; the node running now finishes first."
          : "The action is written to the task's log under your name.",
      confirmLabel: action[0].toUpperCase() + action.slice(1),
      danger: action === "restart" || action === "move",
      reason: action !== "retry",
    });
    if (!answer.ok) return;
    await act(() =>
      postJson(`/console/api/tasks/${encodeURIComponent(taskId)}/${action}`, {
        ...body,
        ...(answer.reason ? { reason: answer.reason } : {}),
      }),
    );
  }

  async function cancelTask() {
    const answer = await confirmDialog({
      title: "Cancel this task?",
      message: `"${detail.task.title}" stops where it is; this cannot be undone.`,
      confirmLabel: "Cancel task",
      reason: true,
    });
    if (!answer.ok) return;
    await act(() =>
      postJson(
        `/console/api/tasks/${encodeURIComponent(taskId)}/cancel`,
        answer.reason ? { reason: answer.reason } : {},
      ),
    );
  }

  // The interrupt is re-rendered only when it changes, so typing in its form survives live refreshes.
  let shownInterrupt;
  const renderInterrupt = () => {
    const pending = detail.interrupt && detail.task.status.startsWith("waiting-") ? detail.interrupt : undefined;
    const key = pending
      ? `${pending.interruptId}:${pending.exchanges.length}:${Boolean(detail.interruptTokens?.resolve)}`
      : "";
    if (key === shownInterrupt) return;
    shownInterrupt = key;
    if (!pending) {
      interruptBox.replaceChildren();
      interruptBox.className = "";
      return;
    }
    interruptBox.className = "panel interrupt";
    const token = detail.interruptTokens?.resolve;
    const form = detail.interruptForm;
    const formError = el("p", { id: "interrupt-form-error", class: "field-error", role: "alert", hidden: true });
    const send = async (resumeValue) => {
      formError.hidden = true;
      try {
        // As the operator (the log records who decided); a peer agent's question through the signed token.
        if (form?.kind === "questions" && form.remote)
          await postJson(`/v1/interrupts/${encodeURIComponent(token)}`, { resumeValue });
        else
          await postJson(
            `/console/api/tasks/${encodeURIComponent(taskId)}/interrupts/${encodeURIComponent(pending.nodeId)}`,
            { resumeValue },
          );
        scheduleRefresh();
      } catch (err) {
        formError.textContent = err.body?.message ?? String(err.message ?? err);
        formError.hidden = false;
      }
    };
    const fieldError = (input, message) => {
      const box = document.getElementById(`${input.id}-error`);
      box.textContent = message ?? "";
      box.hidden = !message;
      if (message) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
      return !message;
    };
    const labelled = (id, label, input, hint) =>
      el(
        "div",
        { class: "field" },
        el("label", { for: id }, label, hint ? el("span", { class: "muted" }, ` ${hint}`) : ""),
        input,
        el("p", { id: `${id}-error`, class: "field-error", hidden: true }),
      );
    const parts = [];
    parts.push(
      el(
        "h2",
        {},
        pending.kind === "approval"
          ? "Waiting for an approver"
          : form?.remote
            ? "The peer agent asks"
            : "Waiting for an answer",
        " at node ",
        el("code", {}, pending.nodeId),
      ),
    );
    if (pending.expiresAt)
      parts.push(el("p", { class: "muted" }, `Decide before ${new Date(pending.expiresAt).toLocaleString()}`));
    if (pending.exchanges.length)
      parts.push(
        el(
          "ul",
          { class: "exchanges", "aria-label": "Questions asked" },
          pending.exchanges.map((x) => el("li", {}, el("strong", {}, x.askedBy), `: ${x.question}`)),
        ),
      );
    if (form?.kind === "questions") {
      const inputs = form.fields.map((f) =>
        el("textarea", {
          id: `answer-${f.id}`,
          name: f.id,
          rows: 2,
          "aria-describedby": `answer-${f.id}-error`,
          "aria-required": f.required ? "true" : undefined,
        }),
      );
      const f = el(
        "form",
        {
          id: "interrupt-form",
          novalidate: true,
          onsubmit: (e) => {
            e.preventDefault();
            let ok = true;
            form.fields.forEach(
              (field, i) =>
                (ok =
                  fieldError(
                    inputs[i],
                    field.required && !inputs[i].value.trim() ? "An answer is required." : undefined,
                  ) && ok),
            );
            if (!ok) return void f.querySelector("[aria-invalid=true]")?.focus();
            const answers = form.fields
              .map((field, i) => ({ id: field.id, answer: inputs[i].value.trim() }))
              .filter((a) => a.answer);
            void send({ answers });
          },
        },
        form.remote
          ? el("p", { class: "untrusted" }, "The question comes from a remote agent: untrusted content.")
          : "",
        form.fields.map((field, i) =>
          labelled(inputs[i].id, field.label, inputs[i], field.required ? "(required)" : "(optional)"),
        ),
        el(
          "div",
          { class: "actions" },
          el("button", { type: "submit", id: "send-answers", disabled: !token }, "Send answers"),
        ),
      );
      parts.push(f);
    } else if (form?.kind === "approval") {
      parts.push(
        el(
          "p",
          {},
          el("strong", { id: "approval-title" }, form.title),
          form.description ? ` — ${form.description}` : "",
        ),
      );
      parts.push(
        el(
          "div",
          { id: "review-artifacts", class: "review" },
          el("h3", {}, "Under review"),
          form.artifacts.length
            ? form.artifacts.map(artifactView)
            : el("p", { class: "muted" }, "No artifact to review."),
        ),
      );
      const note = el("textarea", { id: "interrupt-text", rows: 2, "aria-describedby": "interrupt-text-error" });
      const needText = (what) =>
        fieldError(note, note.value.trim() ? undefined : `Write the ${what} first.`) || (note.focus(), false);
      const buttons = [];
      const actions = form.actions;
      if (actions.includes("accept"))
        buttons.push(
          el(
            "button",
            { type: "button", id: "approve", disabled: !token, onclick: () => void send({ action: "accept" }) },
            "Approve",
          ),
        );
      if (actions.includes("refine"))
        buttons.push(
          el(
            "button",
            {
              type: "button",
              id: "refine",
              class: "secondary",
              disabled: !token,
              onclick: () =>
                needText("feedback") &&
                void send({ action: "refine", refineFeedback: { scope: "whole", text: note.value.trim() } }),
            },
            "Refine",
          ),
        );
      if (actions.includes("ask"))
        buttons.push(
          el(
            "button",
            {
              type: "button",
              id: "ask",
              class: "secondary",
              disabled: !token,
              onclick: () => needText("question") && void send({ action: "ask", question: note.value.trim() }),
            },
            "Ask",
          ),
        );
      if (actions.includes("reject"))
        buttons.push(
          el(
            "button",
            {
              type: "button",
              id: "reject",
              class: "danger",
              disabled: !token,
              onclick: async () => {
                const answer = await confirmDialog({
                  title: "Reject?",
                  message: `Reject "${form.title}"? The task goes where the workflow sends a rejection (often: it fails).`,
                  confirmLabel: "Reject",
                });
                if (answer.ok)
                  await send({ action: "reject", ...(note.value.trim() ? { feedback: note.value.trim() } : {}) });
              },
            },
            "Reject…",
          ),
        );
      parts.push(labelled("interrupt-text", "Feedback (for Refine) or question (for Ask)", note));
      parts.push(el("div", { class: "actions" }, buttons));
      if (actions.includes("edit-accept"))
        parts.push(
          editAcceptForm(
            form.artifacts[0],
            (editedArtifactData) => send({ action: "edit-accept", editedArtifactData }),
            fieldError,
            labelled,
            !token,
          ),
        );
    } else {
      const raw = el("textarea", { id: "interrupt-json", rows: 3, "aria-describedby": "interrupt-json-error" });
      parts.push(
        el("details", {}, el("summary", {}, "Interrupt data"), el("pre", {}, JSON.stringify(pending.data, null, 2))),
      );
      parts.push(labelled("interrupt-json", "resumeValue (JSON object)", raw));
      parts.push(
        el(
          "div",
          { class: "actions" },
          el(
            "button",
            {
              type: "button",
              id: "resume-json",
              disabled: !token,
              onclick: () => {
                let value;
                try {
                  value = JSON.parse(raw.value);
                } catch {
                  value = undefined;
                }
                if (
                  !fieldError(
                    raw,
                    value && typeof value === "object" && !Array.isArray(value) ? undefined : "Write a JSON object.",
                  )
                )
                  return;
                void send(value);
              },
            },
            "Send",
          ),
        ),
      );
    }
    parts.push(formError);
    if (!token)
      parts.push(
        el(
          "p",
          { class: "muted" },
          `Your ${csrfToken ? "sign-in" : "API key"} lacks the approvals:respond scope: no resolve token was issued.`,
        ),
      );
    interruptBox.replaceChildren(...parts);
  };

  const renderPush = async () => {
    const push = await api(`/console/api/tasks/${encodeURIComponent(taskId)}/push`);
    if (!push.enabled)
      return pushBox.replaceChildren(el("p", { class: "muted" }, "Push notifications are disabled on this host."));
    if (push.configs.length === 0 && push.deadLetters.length === 0)
      return pushBox.replaceChildren(el("p", { class: "muted" }, "No push configs."));
    pushBox.replaceChildren(
      el(
        "table",
        {},
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            [
              "Config",
              "Target",
              "Delivered up to",
              "Attempts",
              "Next retry",
              "Last error",
              "Delivering instance",
              "",
            ].map((h) => el("th", { scope: "col" }, h)),
          ),
        ),
        el(
          "tbody",
          {},
          push.configs.map((c) =>
            el(
              "tr",
              {},
              el("td", { class: "mono" }, c.configId),
              el("td", { class: "mono" }, c.target),
              el("td", {}, c.delivery.settled ? "settled" : `#${c.delivery.cursor}`),
              el("td", {}, c.delivery.attempts),
              el("td", {}, time(c.delivery.nextAttemptAt) || "—"),
              el("td", { class: "mono" }, c.delivery.lastError ?? ""),
              el("td", { class: "mono" }, c.lease ? `${c.lease.owner} (until ${time(c.lease.expiresAt)})` : "—"),
              el(
                "td",
                {},
                c.delivery.settled
                  ? ""
                  : el(
                      "button",
                      {
                        type: "button",
                        class: "secondary",
                        onclick: () =>
                          act(() =>
                            postJson(
                              `/console/api/tasks/${encodeURIComponent(taskId)}/push/${encodeURIComponent(c.configId)}/retry`,
                            ),
                          ),
                      },
                      "Retry now",
                    ),
              ),
            ),
          ),
        ),
      ),
      push.deadLetters.length ? el("h3", {}, "Dead letters") : "",
      push.deadLetters.map((d) =>
        el(
          "p",
          { class: "mono" },
          `#${d.sequence} ${d.state} → ${d.target}: ${d.reason} after ${d.attempts} attempts (${d.lastError})`,
        ),
      ),
    );
  };

  let refreshing;
  const refresh = async () => {
    detail = await api(`/console/api/tasks/${encodeURIComponent(taskId)}`);
    // Drawn again when the task moved to another version of its workflow.
    const drawnVersion = workflow?.graph.version;
    if (!workflow || (detail.task.workflowVersion && detail.task.workflowVersion !== drawnVersion)) {
      // The graph as the task's own version has it (a deploy since may have changed the workflow).
      const version = detail.task.workflowVersion;
      const graph = await api(
        `/console/api/workflows/${encodeURIComponent(detail.task.workflowId)}${version ? `?version=${encodeURIComponent(version)}` : ""}`,
      ).catch(() => undefined);
      if (graph) {
        const key = `${graph.id}@${graph.version}`;
        if (!workflowLayouts.has(key)) workflowLayouts.set(key, layoutWorkflow(graph));
        workflow = { graph, layout: workflowLayouts.get(key) };
        const inUse = graph.versions.map((v) => `${v.version}${v.deployed ? " (deployed)" : ""}: ${v.liveRuns} live`);
        document.getElementById("wf-title").textContent =
          `Workflow: ${graph.name} · version ${graph.version}${graph.deployed ? " (deployed)" : " (not the deployed one)"}` +
          (inUse.length ? ` · versions in use: ${inUse.join(", ")}` : "");
      }
    }
    for (const e of detail.events) addEvent(e);
    render();
    await renderPush();
  };
  // Commits arrive in bursts; one re-read per burst is enough.
  const scheduleRefresh = () => {
    refreshing ??= new Promise((resolve) => setTimeout(resolve, 80))
      .then(refresh)
      .catch(showError)
      .finally(() => (refreshing = undefined));
  };
  async function act(call) {
    try {
      await call();
      scheduleRefresh();
    } catch (err) {
      showError(err);
    }
  }

  await refresh();
  // Events are named by their type; the stream ends after the run's terminal event.
  const follow = async () => {
    await stream(
      `/console/api/tasks/${encodeURIComponent(taskId)}/events?after=${lastSequence}`,
      signal,
      (event, data) => {
        if (event === "error") return showError(new Error(data.message));
        addEvent(data);
        scheduleRefresh();
      },
    );
    setLive("ended");
  };
  follow().catch(streamFailed);
}

function streamFailed(err) {
  if (err?.name === "AbortError") return; // the view changed
  setLive("lost", String(err?.message ?? err));
  showError(err);
}

/**
 * Edit and accept: an editable copy of the proposal under review (its text, or its data as JSON), sent as
 * `editedArtifactData` (a string stays text; JSON is parsed, and must parse).
 */
function editAcceptForm(artifact, send, fieldError, labelled, disabled) {
  const text = (artifact?.parts ?? [])
    .filter((p) => p.kind === "text")
    .map((p) => p.text)
    .join("\n");
  const data = (artifact?.parts ?? []).find((p) => p.kind === "data")?.data;
  const asJson = !text && data !== undefined;
  const copy = el("textarea", {
    id: "edit-copy",
    rows: 4,
    "aria-describedby": "edit-copy-error",
    value: asJson ? JSON.stringify(data.value ?? data, null, 2) : text,
  });
  const submit = () => {
    let value = copy.value;
    if (asJson) {
      try {
        value = JSON.parse(copy.value);
      } catch {
        return void fieldError(copy, "Write valid JSON.");
      }
    } else if (!value.trim()) {
      return void (fieldError(copy, "The edited proposal is empty."), copy.focus());
    }
    fieldError(copy);
    void send(value);
  };
  return el(
    "details",
    { class: "edit-accept", id: "edit-accept-panel" },
    el("summary", {}, "Edit the proposal, then accept it"),
    labelled(
      "edit-copy",
      asJson ? "Edited proposal (JSON)" : "Edited proposal",
      copy,
      "(replaces the artifact under review)",
    ),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", id: "edit-accept", disabled, onclick: submit }, "Accept with edits"),
    ),
  );
}

function partsView(parts) {
  return (parts ?? []).map((p) =>
    p.kind === "text"
      ? el("pre", {}, p.text)
      : p.kind === "data"
        ? el("pre", {}, JSON.stringify(p.data, null, 2))
        : el("pre", {}, `[file ${p.file?.name ?? ""}]`),
  );
}

function artifactView(a) {
  return el(
    "div",
    { class: "message artifact", "data-artifact-id": a.artifactId },
    el("strong", {}, a.name ?? a.artifactId),
    " ",
    el("span", { class: "muted mono" }, a.artifactId),
    partsView(a.parts),
  );
}

// ------------------------------------------------------------------ routing

/** Same-origin navigation without a reload: /console (the list, filters in the query) and /console/tasks/{id}. */
function navigate(url) {
  history.pushState(null, "", url);
  void route();
}

async function route() {
  clearError();
  viewScope.abort();
  viewScope = new AbortController();
  setLive("live");
  // Links of the first console (#/tasks/{id}, #/?filters) still open what they named.
  const legacy = /^#\/(tasks\/(.+)|\?(.*))?$/.exec(location.hash);
  if (legacy)
    history.replaceState(
      null,
      "",
      legacy[2] ? taskHref(decodeURIComponent(legacy[2])) : `/console${legacy[3] ? `?${legacy[3]}` : ""}`,
    );
  try {
    const task = /^\/console\/tasks\/([^/]+)$/.exec(location.pathname);
    if (task) await showTask(decodeURIComponent(task[1]));
    else if (location.pathname === "/console/limits")
      await (await import("/console/assets/console-limits.js")).showLimits({ view, api, el });
    else await showList(new URLSearchParams(location.search));
    view.focus({ preventScroll: true });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      view.replaceChildren(
        el(
          "section",
          { class: "panel", id: "not-found" },
          el("h1", {}, "Not found"),
          el("p", {}, err.body?.message ?? "There is no such task."),
          el("a", { href: "/console", "data-nav": "" }, "← all tasks"),
        ),
      );
    }
    // The session may have ended (its token expired): offer the sign-in again.
    if (err instanceof ApiError && err.status === 401) void loadSession();
    showError(err);
  }
}

document.addEventListener("click", (e) => {
  const link = e.target instanceof Element ? e.target.closest("a[data-nav]") : null;
  if (!link || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(link.getAttribute("href"));
});
document.getElementById("api-key").value = apiKey();
document.getElementById("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("openwop-console-key", document.getElementById("api-key").value.trim());
  void route();
});
document.getElementById("sign-out").addEventListener("click", async () => {
  try {
    const out = await postJson("/console/auth/logout");
    if (out.endSessionUrl) return location.assign(out.endSessionUrl);
  } catch (err) {
    showError(err);
  }
  await loadSession();
  void route();
});
window.addEventListener("popstate", () => void route());
// Only the first console's links (#/…) route; other fragments (the skip link) stay in-page.
window.addEventListener("hashchange", () => {
  if (location.hash.startsWith("#/")) void route();
});
void loadSession().finally(() => void route());
