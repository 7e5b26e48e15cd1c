// The task page's steering (docs/operating.md "Steering a task"): pause / resume, retry the failed node, restart
// from a node reached, move to another version of the workflow, cancel. Each asks for confirmation first.
import { postJson } from "./console-api.js";
import { confirmDialog, el } from "./console-dom.js";

/**
 * The buttons (and their selects) for the task `t` as it stands, the cancel button last. `page` gives the task's
 * id, its `detail()` and `workflow()` as last read, and `act(call)`, which runs a call and refreshes the page.
 */
export function steeringControls(t, page) {
  const { taskId, act } = page;
  const detail = page.detail();
  const workflow = page.workflow();
  const cancellable = !["completed", "failed", "cancelled", "cancelling"].includes(t.status);
  const pausable = ["pending", "running", "waiting-approval", "waiting-input", "waiting-external"].includes(t.status);
  const restartable = ["paused", "failed", "waiting-approval", "waiting-input", "waiting-external"].includes(t.status);
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
  controls.push(
    el(
      "button",
      { type: "button", class: "danger", id: "cancel", disabled: !cancellable, onclick: () => void cancelTask() },
      "Cancel task…",
    ),
  );
  return controls;

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
      message: `"${page.detail().task.title}" stops where it is; this cannot be undone.`,
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
}
