/* global document, performance, URLSearchParams, FormData, CSS */
// The task list (/console, its filters in the query): paged through a keyset cursor, live, with bulk actions.
import { api, postJson, stream } from "./console-api.js";
import { ageOf, badge, confirmDialog, el, taskHref, time, toLocalInput } from "./console-dom.js";
import { setLive, showError, streamFailed } from "./console-status.js";
import { diagrams } from "./console-task-graph.js";

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

const FILTERS = ["q", "state", "skill", "tenant", "contextId", "createdFrom", "createdTo", "updatedFrom", "updatedTo"];

/** The list for the query `params`; `navigate` opens another URL of the console, `signal` stops the live stream. */
export async function showList(params, { signal, navigate }) {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, params.get(name) ?? ""]));
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
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
