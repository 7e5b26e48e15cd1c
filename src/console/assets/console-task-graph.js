// The task page's two diagrams: its workflow's graph (the version the task runs) and the state machine, each
// with the task's path drawn on it. The drawing code (and dagre under it) is console-diagram.js.
import { api } from "./console-api.js";
import { el } from "./console-dom.js";

/**
 * The diagrams (and dagre under them) load only when a task page needs them, or once the list is on screen:
 * a static import would put two more sequential script fetches before the list's first request.
 */
let diagramModule;
export const diagrams = () => (diagramModule ??= import("/console/assets/console-diagram.js"));

let machineLayout;
const workflowLayouts = new Map();

const legend = (...items) =>
  el("div", { class: "legend" }, ...items.flatMap(([swatch, label]) => [el("span", { class: `sw ${swatch}` }), label]));

/**
 * The diagrams' panels (`element`), the workflow graph of the task's version (`workflow()`: its graph and
 * layout, once read), `load(detail)` to read that graph again when the task moved to another version, and
 * `draw(detail)` to draw the task on both.
 */
export async function taskDiagrams() {
  const { drawMachine, layoutMachine, drawWorkflow, layoutWorkflow } = await diagrams();
  machineLayout ??= layoutMachine(await api("/console/api/machine"));
  const diagram = el("div", { class: "diagram", id: "diagram" });
  const wfDiagram = el("div", { class: "diagram", id: "workflow-graph" });
  const wfTitle = el("h2", { id: "wf-title" }, "Workflow");
  const element = el(
    "div",
    { class: "diagrams" },
    el(
      "section",
      { class: "panel" },
      wfTitle,
      wfDiagram,
      legend(
        ["sw-current", "current node"],
        ["sw-visited", "visited"],
        ["sw-taken", "path taken"],
        ["sw-remote", "remote (a2a.invoke)"],
      ),
    ),
    el(
      "section",
      { class: "panel" },
      el("h2", {}, "State machine"),
      diagram,
      legend(["sw-current", "current"], ["sw-visited", "visited"], ["sw-taken", "transition taken"]),
    ),
  );
  let workflow;

  const load = async (detail) => {
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
        wfTitle.textContent =
          `Workflow: ${graph.name} · version ${graph.version}${graph.deployed ? " (deployed)" : " (not the deployed one)"}` +
          (inUse.length ? ` · versions in use: ${inUse.join(", ")}` : "");
      }
    }
  };

  const draw = (detail) => {
    const t = detail.task;
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
  };

  return { element, workflow: () => workflow, load, draw };
}
