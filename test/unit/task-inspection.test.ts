// XState live inspection (XSTATE_INSPECT): only the chosen tasks' actors report, fresh and restored alike,
// and the settings refuse what they cannot mean.
import { afterEach, describe, expect, it } from "vitest";
import { applyTaskEvent, createTaskActor, restoreTaskActor } from "../../src/machine/task-actor.js";
import { persistTaskSnapshot } from "../../src/machine/persisted-task-snapshot.js";
import { configureTaskInspection, type TaskInspectionRecord } from "../../src/machine/task-inspection.js";
import { EnvReader } from "../../src/domain/env-settings.js";
import { readOperatorSettings } from "../../src/observability/operator-settings.js";

const loadOperatorSettings = (env: Record<string, string>, production: boolean) =>
  EnvReader.load(env, (reader) => readOperatorSettings(reader, production));

const message = { messageId: "m1", role: "user" as const, parts: [{ kind: "text" as const, text: "hi" }] };
const input = (taskId: string) => ({
  taskId,
  contextId: "c",
  workflowId: "echo",
  tenant: "t",
  firstNode: "n1",
  message,
});

afterEach(() => configureTaskInspection(undefined));

describe("task inspection", () => {
  it("reports events and snapshots of the chosen tasks only", () => {
    const records: TaskInspectionRecord[] = [];
    configureTaskInspection({ taskIds: ["watched"], sink: (r) => records.push(r) });
    const watched = createTaskActor(input("watched"));
    const other = createTaskActor(input("other"));
    applyTaskEvent(watched, { type: "START", at: "2026-01-01T00:00:00Z" });
    applyTaskEvent(other, { type: "START", at: "2026-01-01T00:00:00Z" });
    expect(records.every((r) => r.taskId === "watched")).toBe(true);
    expect(records.map((r) => r.type)).toContain("@xstate.actor");
    expect(
      records.find((r) => r.type === "@xstate.event" && (r.event as { type: string }).type === "START"),
    ).toBeDefined();
    expect(records.filter((r) => r.type === "@xstate.snapshot").at(-1)).toMatchObject({
      state: "running",
      status: "active",
    });

    // A passivated task rehydrated from its snapshot reports too.
    records.length = 0;
    const restored = restoreTaskActor(persistTaskSnapshot(watched.getSnapshot()));
    applyTaskEvent(restored, {
      type: "PAUSE",
      at: "2026-01-01T00:00:01Z",
      by: "op",
      drainPolicy: "drain-current-node",
      statusMessage: { messageId: "p", role: "agent", parts: [{ kind: "text", text: "Paused" }] },
    });
    expect(records.filter((r) => r.type === "@xstate.snapshot").at(-1)).toMatchObject({
      taskId: "watched",
      state: "paused",
    });
  });

  it("reports nothing when off", () => {
    const records: TaskInspectionRecord[] = [];
    configureTaskInspection({ taskIds: [], sink: (r) => records.push(r) });
    applyTaskEvent(createTaskActor(input("x")), { type: "START", at: "2026-01-01T00:00:00Z" });
    configureTaskInspection(undefined);
    applyTaskEvent(createTaskActor(input("y")), { type: "START", at: "2026-01-01T00:00:00Z" });
    expect(records).toEqual([]);
  });
});

describe("operator settings", () => {
  it("console on outside production, off in production unless CONSOLE_ENABLED=true; inspection opt-in", () => {
    expect(loadOperatorSettings({}, false)).toEqual({ console: true, inspectSink: "-" });
    expect(loadOperatorSettings({}, true)).toEqual({ console: false, inspectSink: "-" });
    expect(loadOperatorSettings({ CONSOLE_ENABLED: "true" }, true)).toMatchObject({ console: true });
    expect(() => loadOperatorSettings({ CONSOLE_ENABLED: "yes" }, false)).toThrow(
      /CONSOLE_ENABLED must be true or false/,
    );
    expect(loadOperatorSettings({ XSTATE_INSPECT: "*", XSTATE_INSPECT_FILE: "/tmp/x.ndjson" }, false)).toMatchObject({
      inspectTasks: "*",
      inspectSink: "/tmp/x.ndjson",
    });
    expect(loadOperatorSettings({ XSTATE_INSPECT: "a, b" }, false)).toMatchObject({ inspectTasks: ["a", "b"] });
    expect(() => loadOperatorSettings({ XSTATE_INSPECT: " , " }, false)).toThrow(/XSTATE_INSPECT must be/);
  });
});
