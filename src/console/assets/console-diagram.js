/* global document */
// The task machine diagram: states and transitions read from the exported XState JSON (GET
// /console/api/machine), laid out with dagre, drawn as SVG. The current state and the path the task took
// are marked with classes (.current, .visited, .taken) so tests and styles can find them.
import dagre from "/console/assets/dagre.esm.js";

const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 150;
const NODE_H = 46;

function svg(name, attrs = {}, text) {
  const el = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The laid-out graph's <svg>, with two arrow heads: `${arrow}` and `${arrow}-taken` (for the path taken). */
function diagramRoot(graph, label, arrow) {
  const { width, height } = graph.graph();
  const root = svg("svg", {
    viewBox: `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`,
    width: Math.ceil(width),
    height: Math.ceil(height),
    role: "img",
    "aria-label": label,
  });
  const defs = svg("defs");
  for (const [id, color] of [
    [arrow, "#b7bfcf"],
    [`${arrow}-taken`, "#2f6fed"],
  ]) {
    const marker = svg("marker", {
      id,
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse",
    });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: color }));
    defs.append(marker);
  }
  root.append(defs);
  return root;
}

/** The steps a path took ("from\u0000to") and the states or nodes it entered. */
function pathSets(path) {
  const taken = new Set();
  for (let i = 1; i < path.length; i++) taken.add(`${path[i - 1]}\u0000${path[i]}`);
  return { taken, visited: new Set(path) };
}

/** Transitions with a target, merged per (source, target): one arrow labelled with every event that takes it. */
export function machineEdges(machine) {
  const edges = new Map();
  for (const [source, state] of Object.entries(machine.states)) {
    for (const [eventType, raw] of Object.entries(state.on ?? {})) {
      for (const transition of [raw].flat()) {
        const target = typeof transition === "string" ? transition : transition.target;
        if (!target) continue;
        const key = `${source}\u0000${target}`;
        const edge = edges.get(key) ?? { source, target, events: [] };
        if (!edge.events.includes(eventType)) edge.events.push(eventType);
        edges.set(key, edge);
      }
    }
  }
  return [...edges.values()];
}

/** Lays the machine out once; `draw` then marks a task's position on a fresh SVG. */
export function layoutMachine(machine) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 26, ranksep: 70, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const name of Object.keys(machine.states)) g.setNode(name, { width: NODE_W, height: NODE_H });
  const edges = machineEdges(machine);
  for (const edge of edges) {
    const label = edge.events.join(" / ");
    g.setEdge(edge.source, edge.target, { label, width: label.length * 5.6 + 8, height: 14, labelpos: "c" });
  }
  dagre.layout(g);
  return { graph: g, edges, machine };
}

/**
 * @param layout from layoutMachine
 * @param current the task's machine state (run status)
 * @param path the states the task went through, in order
 * @param a2aState the task's A2A state: a final state is coloured by it (completed green; failed and rejected
 *   red; canceled grey), so a failed task's last state does not look like a success
 */
export function drawMachine(layout, current, path, a2aState) {
  const { graph, edges, machine } = layout;
  const root = diagramRoot(graph, `task machine, current state ${current}`, "arrow");
  const { taken, visited } = pathSets(path);

  for (const edge of edges) {
    const key = `${edge.source}\u0000${edge.target}`;
    const laid = graph.edge(edge.source, edge.target);
    const isTaken = taken.has(key);
    const group = svg("g", {
      class: `edge${isTaken ? " taken" : ""}`,
      "data-source": edge.source,
      "data-target": edge.target,
    });
    const d = laid.points.map((p, i) => `${i === 0 ? "M" : "L"} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(" ");
    group.append(svg("path", { d, "marker-end": `url(#${isTaken ? "arrow-taken" : "arrow"})` }));
    if (laid.x !== undefined) {
      group.append(
        svg("rect", {
          class: "edge-label-bg",
          x: laid.x - laid.width / 2,
          y: laid.y - laid.height / 2,
          width: laid.width,
          height: laid.height,
          rx: 3,
        }),
      );
      group.append(svg("text", { x: laid.x, y: laid.y }, laid.label));
    }
    root.append(group);
  }

  for (const name of graph.nodes()) {
    const node = graph.node(name);
    const config = machine.states[name];
    const classes = ["state"];
    // A terminal state (meta.terminal): `failed` is one too, though not an XState final state (it can be retried).
    const ended = config.type === "final" || config.meta?.terminal === true;
    if (ended) classes.push("final");
    if (visited.has(name)) classes.push("visited");
    if (name === current) classes.push("current");
    const outcome = ended && name === current ? (a2aState ?? config.meta?.a2aState) : undefined;
    if (outcome) classes.push(`outcome-${outcome}`);
    const group = svg("g", {
      class: classes.join(" "),
      "data-state": name,
      ...(outcome ? { "data-outcome": outcome } : {}),
      transform: `translate(${node.x - NODE_W / 2}, ${node.y - NODE_H / 2})`,
    });
    const selfEvents = Object.entries(config.on ?? {})
      .filter(([, raw]) => [raw].flat().some((t) => typeof t !== "string" && !t.target))
      .map(([eventType]) => eventType);
    group.append(
      svg(
        "title",
        {},
        [config.meta?.description ?? name, selfEvents.length ? `Handles in place: ${selfEvents.join(", ")}` : ""]
          .filter(Boolean)
          .join("\n"),
      ),
    );
    group.append(svg("rect", { width: NODE_W, height: NODE_H, rx: 10 }));
    group.append(svg("text", { x: NODE_W / 2, y: 17 }, name));
    group.append(svg("text", { class: "sub", x: NODE_W / 2, y: 33 }, `A2A ${config.meta?.a2aState ?? ""}`));
    root.append(group);
  }
  return root;
}

const WF_W = 170;
const WF_H = 48;

/**
 * The workflow's own graph (GET /console/api/workflows/{skillId}: nodes and edges), laid out once per
 * workflow. A multigraph: an approval may reach one node by two edges (refine, reject).
 */
export function layoutWorkflow(workflow) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 30, ranksep: 44, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of workflow.nodes)
    g.setNode(node.id, { width: node.kind === "end" ? 70 : WF_W, height: node.kind === "end" ? 32 : WF_H });
  workflow.edges.forEach((edge, i) => {
    const label = edge.condition ?? "";
    g.setEdge(
      edge.from,
      edge.to,
      { label, width: label ? label.length * 5.6 + 8 : 0, height: label ? 14 : 0, labelpos: "c" },
      `e${i}`,
    );
  });
  dagre.layout(g);
  return { graph: g, workflow };
}

/**
 * @param layout from layoutWorkflow
 * @param task { current: node id (or "$end"), path: node ids entered in order, remote: { [nodeId]: { peerTaskId, agent } },
 *   outcome: the A2A state of an ended task (its current node is coloured by it) }
 */
export function drawWorkflow(layout, { current, path = [], remote = {}, outcome }) {
  const { graph, workflow } = layout;
  const root = diagramRoot(graph, `workflow ${workflow.name}, current node ${current ?? "none"}`, "wf-arrow");
  const { taken, visited } = pathSets(path);
  workflow.edges.forEach((edge, i) => {
    const laid = graph.edge({ v: edge.from, w: edge.to, name: `e${i}` });
    if (!laid) return;
    const isTaken = taken.has(`${edge.from}\u0000${edge.to}`);
    const group = svg("g", {
      class: `edge ${edge.kind}${isTaken ? " taken" : ""}`,
      "data-from": edge.from,
      "data-to": edge.to,
      "data-kind": edge.kind,
    });
    const d = laid.points.map((p, k) => `${k === 0 ? "M" : "L"} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(" ");
    group.append(svg("path", { d, "marker-end": `url(#${isTaken ? "wf-arrow-taken" : "wf-arrow"})` }));
    if (edge.condition && laid.x !== undefined) {
      group.append(
        svg("rect", {
          class: "edge-label-bg",
          x: laid.x - laid.width / 2,
          y: laid.y - laid.height / 2,
          width: laid.width,
          height: laid.height,
          rx: 3,
        }),
      );
      group.append(svg("text", { x: laid.x, y: laid.y }, edge.condition));
    }
    root.append(group);
  });
  for (const node of workflow.nodes) {
    const laid = graph.node(node.id);
    const w = laid.width;
    const h = laid.height;
    const classes = ["wf-node", `kind-${node.kind.replace(".", "-")}`];
    if (visited.has(node.id)) classes.push("visited");
    if (node.id === current) classes.push("current", ...(outcome ? [`outcome-${outcome}`] : []));
    if (node.remote) classes.push("remote");
    const group = svg("g", {
      class: classes.join(" "),
      "data-node": node.id,
      "data-kind": node.kind,
      transform: `translate(${laid.x - w / 2}, ${laid.y - h / 2})`,
    });
    group.append(
      svg("title", {}, `${node.title}\n${node.kind} node ${node.id}${node.remote ? ` → ${node.remote.agent}` : ""}`),
    );
    group.append(svg("rect", { width: w, height: h, rx: node.kind === "end" ? h / 2 : 8 }));
    group.append(svg("text", { x: w / 2, y: node.kind === "end" ? h / 2 : 18 }, clip(node.title, 23)));
    // The kind may name its own sub-label (an http node: its method and target host).
    const sub =
      node.label ??
      (node.remote ? `⇄ remote ${node.kind}` : node.title === node.id ? node.kind : `${node.kind} · ${node.id}`);
    if (node.kind !== "end") group.append(svg("text", { class: "sub", x: w / 2, y: 35 }, clip(sub, 30)));
    const peer = remote[node.id];
    if (node.remote && peer?.peerTaskId) {
      // The peer's own console, when the peer is an openwop host: its task by id.
      const link = svg("a", {
        href: `${peer.agent}/console/tasks/${encodeURIComponent(peer.peerTaskId)}`,
        target: "_blank",
        rel: "noopener noreferrer",
        class: "peer-link",
        "aria-label": `peer task ${peer.peerTaskId} at ${peer.agent}`,
      });
      link.append(group);
      root.append(link);
    } else {
      root.append(group);
    }
  }
  return root;
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
