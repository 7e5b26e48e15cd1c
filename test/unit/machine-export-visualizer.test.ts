// What the Stately visualizer is given: `npm run --silent machine:export` prints nothing but JSON; that JSON,
// loaded with XState and the machine's real guards and actions, walks the approval path; and the code
// export (`--format ts`) is a createMachine({...}, {guards, actions}) module that runs the same path on its own.
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { createActor, createMachine, type AnyStateMachine } from "xstate";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import { exportTaskMachine } from "../../src/machine/machine-export.js";
import { exportTaskMachineModule } from "../../src/machine/machine-export-module.js";
import { taskMachine } from "../../src/machine/task-machine.js";

const run = promisify(execFile);
const at = "2026-01-01T00:00:00.000Z";
const message = (text: string) => ({
  kind: "message",
  messageId: `m-${text}`,
  role: "agent",
  parts: [{ kind: "text", text }],
});

/** START → a node runs → approval gate → approved → completed, asserting each state on the way. */
function walkApprovalPath(machine: AnyStateMachine): string[] {
  const actor = createActor(machine).start();
  const seen: string[] = [String(actor.getSnapshot().value)];
  const send = (event: Record<string, unknown>) => {
    actor.send({ at, ...event } as never);
    seen.push(String(actor.getSnapshot().value));
  };
  // The export's initial context names its first node "(first node)"; the real guards compare against it.
  send({ type: "START" });
  send({ type: "NODE_STARTED", nodeId: "(first node)" });
  send({ type: "NODE_COMPLETED", nodeId: "(first node)", output: {}, artifacts: [], next: "gate" });
  // An INTERRUPT that is not an approval must not reach waiting-approval (the guard decides).
  const interrupt = { interruptId: "i-1", nodeId: "gate", data: {}, requestedAt: at, exchanges: [] };
  send({ type: "INTERRUPT", interrupt: { ...interrupt, kind: "approval" }, statusMessage: message("approve?") });
  // A RESUME for another node is refused by resolvesPendingInterrupt: the state does not move.
  send({ type: "RESUME", nodeId: "elsewhere", resumeValue: {}, resolvedBy: "op", next: null, output: {} });
  send({
    type: "RESUME",
    nodeId: "gate",
    resumeValue: { decision: "approve" },
    resolvedBy: "op",
    next: null,
    output: { decision: "approve" },
  });
  send({ type: "COMPLETE", statusMessage: message("done") });
  expect(actor.getSnapshot().status).toBe("done");
  return seen;
}

const APPROVAL_PATH = [
  "pending",
  "running",
  "running",
  "running",
  "waiting-approval",
  "waiting-approval",
  "running",
  "completed",
];

describe("npm run --silent machine:export", () => {
  it("prints valid JSON and nothing else on stdout", async () => {
    const { stdout } = await run("npm", ["run", "--silent", "machine:export"], { cwd: projectRoot });
    expect(JSON.parse(stdout)).toEqual(exportTaskMachine());
  });

  it("--format ts prints the code module", async () => {
    const { stdout } = await run("npm", ["run", "--silent", "machine:export", "--", "--format", "ts"], {
      cwd: projectRoot,
    });
    // The guards' source text depends on the transpiler that loaded them, so compare the structure.
    expect(stdout).toMatch(/^import \{ assign, createMachine \} from "xstate";$/m);
    expect(stdout).toContain(
      `export const taskMachine = createMachine(${JSON.stringify(exportTaskMachine(), null, 2)}, {`,
    );
    for (const name of Object.keys(taskMachine.implementations.guards))
      expect(stdout).toMatch(new RegExp(`^    ${name}: \\(`, "m"));
    for (const name of Object.keys(taskMachine.implementations.actions))
      expect(stdout).toMatch(new RegExp(`^    ${name}: assign\\(`, "m"));
  });
});

describe("the JSON export loaded with XState and the real guards", () => {
  it("walks the approval path", () => {
    const json = JSON.parse(JSON.stringify(exportTaskMachine())) as Parameters<typeof createMachine>[0];
    const machine = createMachine(json).provide({
      guards: taskMachine.implementations.guards,
      actions: taskMachine.implementations.actions,
    } as never);
    expect(walkApprovalPath(machine)).toEqual(APPROVAL_PATH);
  });

  it("without the implementations, XState refuses the first guard (why the code export exists)", () => {
    const actor = createActor(createMachine(exportTaskMachine() as Parameters<typeof createMachine>[0]));
    const errors: unknown[] = [];
    actor.subscribe({ error: (err) => errors.push(err) });
    actor.start();
    actor.send({ type: "START", at });
    actor.send({ type: "NODE_STARTED", at, nodeId: "(first node)" });
    expect(String(errors[0] ?? actor.getSnapshot().error)).toMatch(/Guard 'startsCursorNode' is not implemented/);
  });
});

describe("the code export (createMachine module for Stately's Import from code)", () => {
  it("is a module whose own guards and actions walk the approval path", async () => {
    const dir = join(projectRoot, "test-artifacts", "machine-export");
    await mkdir(dir, { recursive: true });
    const file = join(dir, `task-machine-${process.pid}.ts`);
    await writeFile(file, exportTaskMachineModule(), "utf8");
    const module = (await import(file)) as { taskMachine: AnyStateMachine };
    expect(Object.keys(module.taskMachine.implementations.guards).sort()).toEqual(
      Object.keys(taskMachine.implementations.guards).sort(),
    );
    expect(walkApprovalPath(module.taskMachine)).toEqual(APPROVAL_PATH);
  });
});
