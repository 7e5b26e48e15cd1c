/* global document, window, location, sessionStorage, fetch, setTimeout, AbortController, URLSearchParams, TextDecoderStream, Node, FormData */
// The operator console (served at /console): a task list and a task page, both live. Plain browser
// JavaScript, no framework and no build step; every request carries the API key the operator entered
// (kept for this tab only). Data is only ever put into the page as text, never as HTML.
import { drawMachine, layoutMachine } from "/console/assets/console-diagram.js";

const STATES = ["submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled", "rejected"];
const view = document.getElementById("view");
const errorBox = document.getElementById("error");
const liveDot = document.getElementById("live");
let machineLayout;
/** Aborted when the view changes: stops the streams the previous view opened. */
let viewScope = new AbortController();

// ------------------------------------------------------------------ requests

function apiKey() {
  return sessionStorage.getItem("openwop-console-key") ?? "";
}

function headers(extra = {}) {
  const key = apiKey();
  return { ...(key ? { authorization: `Bearer ${key}` } : {}), ...extra };
}

async function api(path, init = {}) {
  const res = await fetch(path, { ...init, headers: headers(init.headers) });
  const body = res.headers.get("content-type")?.includes("json") ? await res.json() : await res.text();
  if (!res.ok) throw new Error(typeof body === "object" && body ? `${body.error}: ${body.message}` : `${res.status} ${body}`);
  return body;
}

function postJson(path, body) {
  return api(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body ?? {}) });
}

/** Server-sent events over fetch (EventSource cannot send the Authorization header). */
async function stream(path, signal, onMessage) {
  const res = await fetch(path, { headers: headers({ accept: "text/event-stream" }), signal });
  if (!res.ok || !res.body) throw new Error(`${path}: ${res.status}`);
  liveDot.classList.remove("off");
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

function showError(err) {
  if (err?.name === "AbortError") return;
  errorBox.textContent = String(err?.message ?? err);
  errorBox.hidden = false;
  setTimeout(() => (errorBox.hidden = true), 8000);
}

// ------------------------------------------------------------------ DOM helpers

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
  return node;
}

const badge = (state) => el("span", { class: `badge ${state}`, "data-a2a-state": state }, state);
const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : "");

// ------------------------------------------------------------------ task list

async function showList(params) {
  const filters = { state: params.get("state") ?? "", skill: params.get("skill") ?? "", tenant: params.get("tenant") ?? "", contextId: params.get("contextId") ?? "", q: params.get("q") ?? "" };
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  const { tenants, tasks } = await api(`/console/api/tasks?${query}`);
  const rows = new Map(tasks.map((t) => [t.taskId, t]));
  const tbody = el("tbody");
  const matches = (t) =>
    (!filters.state || t.a2aState === filters.state) && (!filters.skill || t.workflowId === filters.skill) && (!filters.tenant || t.tenant === filters.tenant) &&
    (!filters.contextId || t.contextId === filters.contextId) && (!filters.q || t.taskId.startsWith(filters.q));
  const render = () => {
    const sorted = [...rows.values()].filter(matches).sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    tbody.replaceChildren(
      ...sorted.map((t) =>
        el("tr", { "data-task-id": t.taskId },
          el("td", {}, el("a", { href: `#/tasks/${encodeURIComponent(t.taskId)}`, class: "mono" }, t.taskId)),
          el("td", {}, badge(t.a2aState)),
          el("td", { class: "mono" }, t.status),
          el("td", {}, t.workflowId),
          el("td", {}, t.tenant),
          el("td", { class: "mono" }, t.contextId),
          el("td", {}, time(t.updatedAt)),
        ),
      ),
    );
    if (sorted.length === 0) tbody.append(el("tr", {}, el("td", { colspan: 7, class: "muted" }, "No tasks match.")));
  };
  const field = (name, label, input) => el("label", {}, label, input);
  const text = (name, placeholder) => el("input", { name, value: filters[name], placeholder });
  const form = el("form", { class: "filters", onsubmit: (e) => {
    e.preventDefault();
    const next = new URLSearchParams([...new FormData(form)].filter(([, v]) => v));
    location.hash = `#/?${next}`;
  } },
    field("q", "Task id", text("q", "id or prefix")),
    field("state", "State", el("select", { name: "state" }, el("option", { value: "" }, "any"), STATES.map((s) => el("option", { value: s, selected: s === filters.state }, s)))),
    field("skill", "Skill", text("skill", "workflow id")),
    field("tenant", "Tenant", el("select", { name: "tenant" }, el("option", { value: "" }, "all"), tenants.map((t) => el("option", { value: t, selected: t === filters.tenant }, t)))),
    field("contextId", "Context", text("contextId", "context id")),
    el("button", { type: "submit" }, "Filter"),
  );
  view.replaceChildren(
    el("section", { class: "panel" }, el("h2", {}, "Tasks"), form),
    el("section", { class: "panel" }, el("table", { id: "tasks" }, el("thead", {}, el("tr", {}, ["Task", "A2A state", "Machine state", "Skill", "Tenant", "Context", "Updated"].map((h) => el("th", {}, h)))), tbody)),
  );
  render();
  const signal = viewScope.signal;
  stream("/console/api/tasks/stream", signal, (event, summary) => {
    if (event !== "message") return;
    rows.set(summary.taskId, summary);
    render();
  }).catch(streamFailed);
}

// ------------------------------------------------------------------ task page

async function showTask(taskId) {
  machineLayout ??= layoutMachine(await api("/console/api/machine"));
  const signal = viewScope.signal;
  const diagram = el("div", { class: "diagram", id: "diagram" });
  const head = el("div", { class: "task-head" });
  const interruptBox = el("section", { id: "interrupt" });
  const logBody = el("tbody");
  const historyBox = el("div", { id: "history" });
  const artifactsBox = el("div", { id: "artifacts" });
  const pushBox = el("div", { id: "push" });
  view.replaceChildren(
    el("section", { class: "panel" }, head),
    interruptBox,
    el("section", { class: "panel" }, el("h2", {}, "State machine"), diagram,
      el("div", { class: "legend" }, el("span", { class: "sw sw-current" }), "current", el("span", { class: "sw sw-visited" }), "visited", el("span", { class: "sw sw-taken" }), "transition taken")),
    el("div", { class: "grid" },
      el("div", {},
        el("section", { class: "panel" }, el("h2", {}, "History"), historyBox),
        el("section", { class: "panel" }, el("h2", {}, "Artifacts"), artifactsBox),
      ),
      el("div", {},
        el("section", { class: "panel" }, el("h2", {}, "Event log ", el("span", { class: "muted", id: "event-count" })), el("div", { class: "log" }, el("table", { id: "event-log" }, el("thead", {}, el("tr", {}, ["#", "Event", "Node", "Time"].map((h) => el("th", {}, h)))), logBody))),
        el("section", { class: "panel" }, el("h2", {}, "Push notifications"), pushBox),
      ),
    ),
  );

  let detail;
  let lastSequence = -1;
  const addEvent = (e) => {
    if (e.sequence <= lastSequence) return;
    lastSequence = e.sequence;
    logBody.append(el("tr", { "data-type": e.type }, el("td", {}, e.sequence), el("td", { class: "mono" }, e.type), el("td", { class: "mono" }, e.nodeId ?? ""), el("td", {}, time(e.timestamp))));
    document.getElementById("event-count").textContent = `(${lastSequence + 1})`;
  };

  const render = () => {
    const t = detail.task;
    const cancellable = !["completed", "failed", "cancelled", "cancelling"].includes(t.status);
    head.replaceChildren(
      el("h1", { class: "mono" }, t.taskId),
      badge(t.a2aState),
      el("span", { class: "mono", id: "machine-state", "data-status": t.status }, t.status),
      el("span", { class: "meta" }, `skill ${t.workflowId} · tenant ${t.tenant} · context ${t.contextId} · v${t.version}`),
      el("span", { class: "spacer" }),
      el("a", { href: "#/" }, "← all tasks"),
      el("button", { class: "danger", id: "cancel", disabled: !cancellable, onclick: () => act(() => postJson(`/console/api/tasks/${encodeURIComponent(taskId)}/cancel`, {})) }, "Cancel task"),
    );
    diagram.replaceChildren(drawMachine(machineLayout, t.status, detail.path));
    renderInterrupt();
    historyBox.replaceChildren(...detail.history.map((m) => el("div", { class: "message" }, el("span", { class: "role" }, m.role), partsView(m.parts))));
    artifactsBox.replaceChildren(...(detail.artifacts.length ? detail.artifacts.map((a) => el("div", { class: "message" }, el("strong", {}, a.name ?? a.artifactId), " ", el("span", { class: "muted mono" }, a.artifactId), partsView(a.parts))) : [el("p", { class: "muted" }, "None yet.")]));
  };

  const renderInterrupt = () => {
    const pending = detail.interrupt && detail.task.status.startsWith("waiting-") ? detail.interrupt : undefined;
    if (!pending) {
      interruptBox.replaceChildren();
      interruptBox.className = "";
      return;
    }
    interruptBox.className = "panel interrupt";
    const token = detail.interruptTokens?.resolve;
    const note = el("textarea", { id: "interrupt-text", placeholder: "Feedback for refine, question for ask, or a JSON resumeValue" });
    const send = (resumeValue) => act(() => postJson(`/v1/interrupts/${encodeURIComponent(token)}`, { resumeValue }));
    const textOr = (what) => {
      const text = note.value.trim();
      if (!text) throw new Error(`write the ${what} in the text box first`);
      return text;
    };
    const actions = pending.kind === "approval" ? pending.data.actions ?? ["accept", "reject"] : [];
    const buttons = [];
    if (actions.includes("accept")) buttons.push(el("button", { id: "approve", disabled: !token, onclick: () => send({ action: "accept" }) }, "Approve"));
    if (actions.includes("reject")) buttons.push(el("button", { id: "reject", class: "danger", disabled: !token, onclick: () => send({ action: "reject" }) }, "Reject"));
    if (actions.includes("refine")) buttons.push(el("button", { id: "refine", class: "secondary", disabled: !token, onclick: () => guard(() => send({ action: "refine", refineFeedback: { scope: "whole", text: textOr("feedback") } })) }, "Refine…"));
    if (actions.includes("ask")) buttons.push(el("button", { id: "ask", class: "secondary", disabled: !token, onclick: () => guard(() => send({ action: "ask", question: textOr("question") })) }, "Ask…"));
    if (pending.kind !== "approval") buttons.push(el("button", { id: "resume-json", disabled: !token, onclick: () => guard(() => send(JSON.parse(textOr("JSON resumeValue")))) }, "Send resumeValue"));
    interruptBox.replaceChildren(
      el("h2", {}, `Waiting for a decision: ${pending.kind} at node `, el("code", {}, pending.nodeId)),
      pending.data.title ? el("p", {}, el("strong", {}, pending.data.title), actions.length ? el("span", { class: "muted" }, ` · offered: ${actions.join(", ")}`) : "") : "",
      el("details", {}, el("summary", { class: "muted" }, "Interrupt data"), el("pre", {}, JSON.stringify(pending.data, null, 2))),
      pending.exchanges.length ? el("p", { class: "muted" }, `Questions asked: ${pending.exchanges.map((x) => x.question).join(" · ")}`) : "",
      note,
      el("div", { class: "actions" }, buttons, token ? "" : el("span", { class: "muted" }, "Your API key lacks approvals:respond: no resolve token was issued.")),
    );
  };

  const renderPush = async () => {
    const push = await api(`/console/api/tasks/${encodeURIComponent(taskId)}/push`);
    if (!push.enabled) return pushBox.replaceChildren(el("p", { class: "muted" }, "Push notifications are disabled on this host."));
    if (push.configs.length === 0 && push.deadLetters.length === 0) return pushBox.replaceChildren(el("p", { class: "muted" }, "No push configs."));
    pushBox.replaceChildren(
      el("table", {}, el("thead", {}, el("tr", {}, ["Config", "Target", "Delivered up to", "Attempts", "Next retry", "Last error", "Delivering instance", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, push.configs.map((c) => el("tr", {},
          el("td", { class: "mono" }, c.configId), el("td", { class: "mono" }, c.target), el("td", {}, c.delivery.settled ? "settled" : `#${c.delivery.cursor}`),
          el("td", {}, c.delivery.attempts), el("td", {}, time(c.delivery.nextAttemptAt) || "—"), el("td", { class: "mono" }, c.delivery.lastError ?? ""),
          el("td", { class: "mono" }, c.lease ? `${c.lease.owner} (until ${time(c.lease.expiresAt)})` : "—"),
          el("td", {}, c.delivery.settled ? "" : el("button", { class: "secondary", onclick: () => act(() => postJson(`/console/api/tasks/${encodeURIComponent(taskId)}/push/${encodeURIComponent(c.configId)}/retry`)) }, "Retry now")),
        )))),
      push.deadLetters.length ? el("h2", {}, "Dead letters") : "",
      push.deadLetters.map((d) => el("p", { class: "mono" }, `#${d.sequence} ${d.state} → ${d.target}: ${d.reason} after ${d.attempts} attempts (${d.lastError})`)),
    );
  };

  let refreshing;
  const refresh = async () => {
    detail = await api(`/console/api/tasks/${encodeURIComponent(taskId)}`);
    for (const e of detail.events) addEvent(e);
    render();
    await renderPush();
  };
  // Commits arrive in bursts; one re-read per burst is enough.
  const scheduleRefresh = () => {
    refreshing ??= new Promise((resolve) => setTimeout(resolve, 80)).then(refresh).catch(showError).finally(() => (refreshing = undefined));
  };
  async function act(call) {
    try {
      await call();
      scheduleRefresh();
    } catch (err) {
      showError(err);
    }
  }
  function guard(call) {
    try {
      call();
    } catch (err) {
      showError(err);
    }
  }

  await refresh();
  // Events are named by their type; the stream ends after the run's terminal event.
  const follow = async () => {
    await stream(`/console/api/tasks/${encodeURIComponent(taskId)}/events?after=${lastSequence}`, signal, (event, data) => {
      if (event === "error") return showError(new Error(data.message));
      addEvent(data);
      scheduleRefresh();
    });
    liveDot.classList.add("off");
  };
  follow().catch(streamFailed);
}

function streamFailed(err) {
  if (err?.name === "AbortError") return; // the view changed
  liveDot.classList.add("off");
  showError(err);
}

function partsView(parts) {
  return (parts ?? []).map((p) => (p.kind === "text" ? el("pre", {}, p.text) : p.kind === "data" ? el("pre", {}, JSON.stringify(p.data, null, 2)) : el("pre", {}, `[file ${p.file?.name ?? ""}]`)));
}

// ------------------------------------------------------------------ routing

async function route() {
  viewScope.abort();
  viewScope = new AbortController();
  liveDot.classList.remove("off");
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, search = ""] = hash.split("?");
  try {
    const task = /^\/tasks\/(.+)$/.exec(path);
    if (task) await showTask(decodeURIComponent(task[1]));
    else await showList(new URLSearchParams(search));
  } catch (err) {
    showError(err);
  }
}

document.getElementById("api-key").value = apiKey();
document.getElementById("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem("openwop-console-key", document.getElementById("api-key").value.trim());
  void route();
});
window.addEventListener("hashchange", () => void route());
void route();
