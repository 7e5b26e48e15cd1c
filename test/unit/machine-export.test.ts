// The Stately/XState JSON export of the task machine: it is plain JSON, it describes exactly the machine
// (states, events, targets, guards, actions, meta; nothing more, nothing less), xstate's createMachine
// reads it back into an equivalent machine, and `npm run machine:export` prints / writes it.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createActor, createMachine, type AnyStateMachine, type AnyStateNode } from "xstate";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import type { Message } from "../../src/domain/a2a-types.js";
import { RUN_STATUSES } from "../../src/domain/run-status.js";
import { exportTaskMachine } from "../../src/machine/machine-export.js";
import type { TaskEvent } from "../../src/machine/task-events.js";
import { taskMachine } from "../../src/machine/task-machine.js";

// ------------------------------------------------------------------------------------------ helpers

/** One transition reduced to what the export has to carry. */
interface TransitionShape {
  target: string[] | null;
  guard: string | null;
  actions: string[];
}

interface StateShape {
  type: string;
  meta: unknown;
  on: Record<string, TransitionShape[]>;
}

function nameOf(ref: unknown, what: string): string {
  if (typeof ref === "string") return ref;
  if (ref && typeof ref === "object" && typeof (ref as { type?: unknown }).type === "string")
    return (ref as { type: string }).type;
  throw new Error(`${what} is not a named reference (inline functions cannot be exported): ${String(ref)}`);
}

/** The transition table of a machine, read from its StateNode objects. */
function machineShape(machine: AnyStateMachine): Record<string, StateShape> {
  const shape: Record<string, StateShape> = {};
  for (const [key, node] of Object.entries(machine.root.states) as Array<[string, AnyStateNode]>) {
    const on: Record<string, TransitionShape[]> = {};
    for (const [eventType, transitions] of node.transitions) {
      on[eventType] = transitions.map((t) => ({
        // Targets are siblings of the source here; a target outside the parent would show up as a mismatch.
        target: t.target ? t.target.map((s: AnyStateNode) => (s.parent === node.parent ? s.key : `#${s.id}`)) : null,
        guard: t.guard === undefined ? null : nameOf(t.guard, `guard of ${key}.${eventType}`),
        actions: t.actions.map((a: unknown) => nameOf(a, `action of ${key}.${eventType}`)),
      }));
    }
    shape[key] = { type: node.type, meta: node.meta, on };
  }
  return shape;
}

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** The same table read from the exported JSON config (XState config shorthands normalized). */
function exportShape(exported: Record<string, unknown>): Record<string, StateShape> {
  const states = exported["states"] as Record<string, Record<string, unknown>>;
  const shape: Record<string, StateShape> = {};
  for (const [key, config] of Object.entries(states)) {
    const on: Record<string, TransitionShape[]> = {};
    for (const [eventType, raw] of Object.entries((config["on"] ?? {}) as Record<string, unknown>)) {
      on[eventType] = asArray(raw as unknown).map((entry) => {
        const t = (typeof entry === "string" ? { target: entry } : entry) as Record<string, unknown>;
        const targets = asArray(t["target"] as string | string[] | undefined);
        return {
          target: targets.length === 0 ? null : targets,
          guard: t["guard"] === undefined ? null : nameOf(t["guard"], `exported guard of ${key}.${eventType}`),
          actions: asArray(t["actions"] as unknown).map((a) => nameOf(a, `exported action of ${key}.${eventType}`)),
        };
      });
    }
    shape[key] = { type: (config["type"] as string | undefined) ?? "atomic", meta: config["meta"], on };
  }
  return shape;
}

/** Every value is null, a boolean, a finite number, a string, an array or a plain object of those. */
function assertPlainJson(value: unknown, path = "$"): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    expect(Number.isFinite(value), path).toBe(true);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertPlainJson(item, `${path}[${i}]`));
    return;
  }
  expect(typeof value, path).toBe("object");
  expect(Object.getPrototypeOf(value), `${path} is a plain object`).toBe(Object.prototype);
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    expect(item, `${path}.${key} is undefined`).not.toBeUndefined();
    assertPlainJson(item, `${path}.${key}`);
  }
}

function stateIds(node: AnyStateNode): string[] {
  return [node.id, ...Object.values(node.states as Record<string, AnyStateNode>).flatMap(stateIds)];
}

function recreate(exported: Record<string, unknown>, overrides: Record<string, unknown> = {}): AnyStateMachine {
  const config = { ...exported, ...overrides } as Parameters<typeof createMachine>[0];
  return createMachine(config).provide({
    guards: taskMachine.implementations.guards,
    actions: taskMachine.implementations.actions,
  } as never);
}

// ------------------------------------------------------------------------------------------- tests

describe("exportTaskMachine()", () => {
  const exported = exportTaskMachine();

  it("is plain JSON and survives a stringify/parse round trip unchanged", () => {
    assertPlainJson(exported);
    expect(JSON.parse(JSON.stringify(exported))).toEqual(exported);
    expect(JSON.stringify(JSON.parse(JSON.stringify(exported)))).toBe(JSON.stringify(exported));
  });

  it("returns a fresh object each call (callers may mutate it)", () => {
    const a = exportTaskMachine();
    (a["states"] as Record<string, unknown>)["pending"] = "mutated";
    expect((exportTaskMachine()["states"] as Record<string, unknown>)["pending"]).not.toBe("mutated");
  });

  it("has the machine's id and initial state", () => {
    expect(exported["id"]).toBe(taskMachine.id);
    const initial = taskMachine.root.initial?.target.map((s: AnyStateNode) => s.key);
    expect(initial).toEqual(["pending"]);
    expect(exported["initial"]).toBe("pending");
  });

  it("has exactly the machine's states (no more, no fewer) — the ten run statuses", () => {
    const exportedStates = Object.keys(exported["states"] as Record<string, unknown>).sort();
    expect(exportedStates).toEqual(Object.keys(taskMachine.root.states).sort());
    expect(exportedStates).toEqual([...RUN_STATUSES].sort());
  });

  const machine = machineShape(taskMachine);
  const fromExport = exportShape(exported);

  describe.each(Object.keys(taskMachine.root.states).map((k) => [k] as const))("state %s", (key) => {
    it("has the same type and meta", () => {
      expect(fromExport[key]).toBeDefined();
      expect(fromExport[key]!.type).toBe(machine[key]!.type);
      expect(fromExport[key]!.meta).toEqual(machine[key]!.meta);
      expect(machine[key]!.meta).toBeDefined();
    });

    it("has the same event names (none missing, none extra)", () => {
      expect(Object.keys(fromExport[key]!.on).sort()).toEqual(Object.keys(machine[key]!.on).sort());
    });

    it("has the same targets, guard names and action names per event, in order", () => {
      for (const [eventType, transitions] of Object.entries(machine[key]!.on)) {
        expect(fromExport[key]!.on[eventType], `${key}.${eventType}`).toEqual(transitions);
      }
      for (const eventType of Object.keys(fromExport[key]!.on)) {
        expect(machine[key]!.on[eventType], `${key}.${eventType} exists in the machine`).toBeDefined();
      }
    });
  });

  it("names only guards and actions the machine implements", () => {
    const guards = new Set(Object.keys(taskMachine.implementations.guards));
    const actions = new Set(Object.keys(taskMachine.implementations.actions));
    for (const [key, state] of Object.entries(fromExport)) {
      for (const [eventType, transitions] of Object.entries(state.on)) {
        for (const t of transitions) {
          if (t.guard) expect(guards.has(t.guard), `${key}.${eventType} guard ${t.guard}`).toBe(true);
          for (const a of t.actions) expect(actions.has(a), `${key}.${eventType} action ${a}`).toBe(true);
        }
      }
    }
  });

  it("the machine table read here is not empty (the comparison is meaningful)", () => {
    const transitions = Object.values(machine).flatMap((s) => Object.values(s.on).flat());
    expect(transitions.length).toBeGreaterThanOrEqual(20);
    expect(transitions.some((t) => t.guard !== null)).toBe(true);
    expect(machine["running"]!.on["INTERRUPT"]).toHaveLength(3);
  });
});

describe("createMachine(exported) with the implementations supplied", () => {
  const exported = exportTaskMachine();

  it("has the same state ids", () => {
    const recreated = recreate(exported);
    expect(stateIds(recreated.root).sort()).toEqual(stateIds(taskMachine.root).sort());
    expect(stateIds(recreated.root)).toContain("task.waiting-external");
  });

  it("has the same transition table and meta", () => {
    expect(machineShape(recreate(exported))).toEqual(machineShape(taskMachine));
  });

  it("runs a task exactly like the original machine (given a real initial context)", () => {
    const original = createActor(taskMachine, {
      input: {
        taskId: "t-1",
        contextId: "c-1",
        workflowId: "approval-gate",
        tenant: "tenant-a",
        firstNode: "prepare",
        message: { messageId: "m-1", role: "user", parts: [{ kind: "text", text: "hi" }] },
      },
    }).start();
    const recreated = createActor(recreate(exported, { context: original.getSnapshot().context })).start();
    const status: Message = { messageId: "s-1", role: "agent", parts: [{ kind: "text", text: "approve?" }] };
    const t = "2026-03-01T10:00:00.000Z";
    const events: TaskEvent[] = [
      { type: "START", at: t },
      { type: "NODE_STARTED", at: t, nodeId: "prepare" },
      { type: "NODE_COMPLETED", at: t, nodeId: "other", output: null, artifacts: [], next: null }, // guarded out
      { type: "NODE_COMPLETED", at: t, nodeId: "prepare", output: { p: 1 }, artifacts: [], next: "gate" },
      {
        type: "INTERRUPT",
        at: t,
        interrupt: { interruptId: "i-1", nodeId: "gate", kind: "approval", data: {}, requestedAt: t, exchanges: [] },
        statusMessage: status,
      },
      { type: "ASK", at: t, question: "why?", askedBy: "bob", statusMessage: status },
      { type: "RESUME", at: t, nodeId: "wrong", resumeValue: {}, resolvedBy: "a", next: null, output: null }, // guarded out
      {
        type: "RESUME",
        at: t,
        nodeId: "gate",
        resumeValue: { action: "accept" },
        resolvedBy: "a",
        next: "finalize",
        output: { action: "accept" },
      },
      {
        type: "PAUSE",
        at: t,
        by: "op",
        drainPolicy: "drain-current-node",
        statusMessage: { messageId: "p", role: "agent", parts: [{ kind: "text", text: "Paused" }] },
      },
      { type: "UNPAUSE", at: t, by: "op" },
      { type: "CANCEL", at: t, reason: "stop", cancelledBy: "carol" },
      { type: "CANCELLED", at: t },
    ];
    const trail: string[] = [];
    for (const event of events) {
      original.send(event);
      recreated.send(event);
      expect(recreated.getSnapshot().value, `after ${event.type}`).toEqual(original.getSnapshot().value);
      expect(recreated.getSnapshot().context, `after ${event.type}`).toEqual(original.getSnapshot().context);
      trail.push(String(original.getSnapshot().value));
    }
    expect(trail).toEqual([
      "running",
      "running",
      "running",
      "running",
      "waiting-approval",
      "waiting-approval",
      "waiting-approval",
      "running",
      "paused",
      "running",
      "cancelling",
      "cancelled",
    ]);
  });
});

describe("scripts/export-machine.ts (npm run machine:export)", () => {
  const run = promisify(execFile);
  const tsx = join(projectRoot, "node_modules", ".bin", "tsx");
  const script = join(projectRoot, "scripts", "export-machine.ts");
  const expected = `${JSON.stringify(exportTaskMachine(), null, 2)}\n`;

  it("prints the pretty JSON to stdout", async () => {
    const { stdout } = await run(tsx, [script], { cwd: projectRoot });
    expect(stdout).toBe(expected);
    expect(JSON.parse(stdout)).toEqual(exportTaskMachine());
  });

  it("writes the JSON to the path given as the first argument (creating folders)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "machine-export-"));
    try {
      const target = join(dir, "nested", "task-machine.json");
      const { stdout } = await run(tsx, [script, target], { cwd: projectRoot });
      expect(stdout).toBe("");
      expect(await readFile(target, "utf8")).toBe(expected);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
