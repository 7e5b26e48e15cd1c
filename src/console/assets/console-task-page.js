/* global document, setTimeout */
// The task page (/console/tasks/{id}): its head, interrupt, diagrams, timeline, history, artifacts and push
// notifications, read again after every commit the live stream announces.
import { api, stream } from "./console-api.js";
import { ageOf, badge, el, taskHref } from "./console-dom.js";
import { artifactView, partsView } from "./console-parts.js";
import { setLive, showError, streamFailed } from "./console-status.js";
import { taskDiagrams } from "./console-task-graph.js";
import { interruptPanel } from "./console-task-interrupt.js";
import { renderPush } from "./console-task-push.js";
import { steeringControls } from "./console-task-steering.js";
import { taskTimeline } from "./console-task-timeline.js";

const view = document.getElementById("view");

/** The page of the task `taskId`; `signal` stops its live stream. */
export async function showTask(taskId, { signal }) {
  const diagrams = await taskDiagrams();
  const timeline = taskTimeline();
  const head = el("div", { class: "task-head" });
  const interruptBox = el("section", { id: "interrupt", "aria-live": "polite" });
  const historyBox = el("div", { id: "history" });
  const artifactsBox = el("div", { id: "artifacts" });
  const pushBox = el("div", { id: "push" });
  view.replaceChildren(
    el("section", { class: "panel" }, head),
    interruptBox,
    diagrams.element,
    el(
      "div",
      { class: "grid" },
      el("div", {}, timeline.element),
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
  const page = { taskId, detail: () => detail, workflow: diagrams.workflow, act };
  const renderInterrupt = interruptPanel(interruptBox, { taskId, onSent: () => scheduleRefresh() });

  const render = () => {
    const t = detail.task;
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
        ...steeringControls(t, page),
      ),
    );
    diagrams.draw(detail);
    renderInterrupt(detail);
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

  let refreshing;
  const refresh = async () => {
    detail = await api(`/console/api/tasks/${encodeURIComponent(taskId)}`);
    await diagrams.load(detail);
    for (const e of detail.events) timeline.add(e);
    render();
    await renderPush(pushBox, taskId, act);
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
      `/console/api/tasks/${encodeURIComponent(taskId)}/events?after=${timeline.lastSequence()}`,
      signal,
      (event, data) => {
        if (event === "error") return showError(new Error(data.message));
        timeline.add(data);
        scheduleRefresh();
      },
    );
    setLive("ended");
  };
  follow().catch(streamFailed);
}
