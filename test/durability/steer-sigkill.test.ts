import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { openwopClient } from "../support/openwop-client.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

/**
 * An operator's action is one committed write: a SIGKILL while it is in flight leaves the task either as it
 * was or as the action left it (never half: a log event without the head, or the head without its event), and
 * the task can still be steered and finished after the restart.
 */
describe("SIGKILL during a steering action", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `steer_kill_${randomUUID().slice(0, 8)}`;
  let server: ServerProcess | undefined;
  let mongo: MongoClient;
  const env = { MONGODB_URI: mongoUri, MONGODB_DB: dbName, TIMER_POLL_MS: "100" };

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
  });
  afterAll(async () => {
    await server?.kill();
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const ACTIONS = [
    { path: (id: string) => `/v1/runs/${id}:pause`, body: {}, event: "run.paused" },
    {
      path: (id: string) => `/host/openwop-a2a-host/runs/${id}:restart`,
      body: { nodeId: "prepare" },
      event: "openwop-a2a-host.run.restarted",
    },
  ] as const;

  it.each([0, 2, 5, 8, 12, 20].map((delayMs, i) => ({ delayMs, action: ACTIONS[i % 2]! })))(
    "$action.event, killed $delayMs ms after the request: the old state or the new one, whole",
    async ({ delayMs, action }) => {
      server ??= await startServerProcess(env);
      let api = openwopClient(server.baseUrl);
      const runId = await api.startRun("approval-gate", { text: "Send the report" });
      await api.waitForRun(runId, (s) => s.status === "waiting-approval");

      const inFlight = fetch(`${server.baseUrl}${action.path(runId)}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(action.body),
      }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, delayMs));
      const port = server.port;
      await server.kill();
      await inFlight;
      server = await startServerProcess(env, port);
      api = openwopClient(server.baseUrl);

      // Read as every reader reads it (the store reconciles a write cut between its two commands).
      const status = (await api.call("GET", `/v1/runs/${runId}`)).body.status as string;
      const log = (await api.call("GET", `/v1/runs/${runId}/events/poll?after=-1&timeoutMs=0`)).body.events as Array<{
        type: string;
        sequence: number;
      }>;
      expect(log.map((e) => e.sequence)).toEqual(log.map((_e, i) => i));
      const acted = log.filter((e) => e.type === action.event);
      expect(acted.length).toBeLessThanOrEqual(1);
      if (acted.length === 1 && action.event === "run.paused") expect(status).toBe("paused");
      if (acted.length === 1 && action.event === "openwop-a2a-host.run.restarted")
        expect(["running", "waiting-approval"]).toContain(status); // restarted, and maybe already back at the gate
      if (acted.length === 0) expect(status).toBe("waiting-approval");

      // Whatever survived, the task is still steerable and finishes.
      if (status === "paused") expect((await api.call("POST", `/v1/runs/${runId}:resume`, {})).status).toBe(202);
      await api.waitForRun(runId, (s) => s.status === "waiting-approval");
      const approved = await api.call("POST", `/v1/runs/${runId}/interrupts/gate`, {
        resumeValue: { action: "accept" },
      });
      expect(approved.status).toBe(200);
      await api.waitForRun(runId, (s) => s.status === "completed");
    },
    60_000,
  );
});
