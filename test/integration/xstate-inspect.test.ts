// XSTATE_INSPECT on the real app: a task's actor reports through XState's inspection API, and the records
// land in XSTATE_INSPECT_FILE as JSON lines.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TaskInspectionRecord } from "../../src/machine/task-inspection.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp } from "../support/start-server.js";

describe("XSTATE_INSPECT on the real app", () => {
  it("writes a task's transitions to XSTATE_INSPECT_FILE as JSON lines", async () => {
    const dir = await mkdtemp(join(tmpdir(), "inspect-"));
    const file = join(dir, "inspect.ndjson");
    const t = await startTestApp({ XSTATE_INSPECT: "*", XSTATE_INSPECT_FILE: file });
    try {
      const api = openwopClient(t.baseUrl);
      const runId = await api.startRun("echo", { text: "inspect me" });
      await api.waitForRun(runId, (s) => s.status === "completed");
      const records = (await readFile(file, "utf8"))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as TaskInspectionRecord);
      const states = records.filter((r) => r.taskId === runId && r.type === "@xstate.snapshot").map((r) => r.state);
      expect(states).toContain("running");
      expect(states.at(-1)).toBe("completed");
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
