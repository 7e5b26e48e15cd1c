// Overload shed early, in order: while the store's latency or the event loop's delay is over its limit, new tasks
// are refused first (503 + Retry-After, UNAVAILABLE) and /readyz says the instance is shedding; replies to waiting
// tasks, approvals, reads and cancels are still served. The condition is forced (a slow store ping, a blocked
// loop), never timed.
import { randomUUID } from "node:crypto";
import type { ConnectError } from "@connectrpc/connect";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { A2AService, Role } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;

/** The in-memory store, whose ping takes as long as the test says. */
class SlowPingStore extends MemoryTaskStore {
  pingMs = 0;
  override async ping(): Promise<void> {
    if (this.pingMs > 0) await new Promise((r) => setTimeout(r, this.pingMs));
  }
}

describe("overload shedding", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const rpc = async (method: string, params: unknown) => {
    const res = await fetch(`${t!.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Obj };
  };
  const newTask = () =>
    rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: "Send the quarterly report" }],
        metadata: { skillId: "approval-gate" },
      },
    });
  const readyz = async () => {
    const res = await fetch(`${t!.baseUrl}/readyz`);
    return { status: res.status, body: (await res.json()) as Obj };
  };
  async function untilReady(ready: boolean): Promise<Obj> {
    let answer = await readyz();
    for (let i = 0; i < 300 && (answer.status === 200) !== ready; i++) {
      await new Promise((r) => setTimeout(r, 20));
      answer = await readyz();
    }
    expect(answer.status).toBe(ready ? 200 : 503);
    return answer.body;
  }

  it("a slow store: new tasks are refused first on every binding; replies, reads and cancels are served; it recovers", async () => {
    const store = new SlowPingStore();
    t = await startTestApp({ OVERLOAD_STORE_LATENCY_MS: "20", OVERLOAD_EVENT_LOOP_DELAY_MS: "0" }, store);
    const waiting = (await newTask()).body["result"]["id"] as string;
    const other = (await newTask()).body["result"]["id"] as string;
    store.pingMs = 100;
    const report = await untilReady(false);
    expect(report["reason"]).toMatch(/^shedding new tasks: store latency \d+ ms over OVERLOAD_STORE_LATENCY_MS=20$/);
    expect(report["checks"]).toMatchObject({ shedding: true, store: "ok" });
    // A probe that takes the instance out of all traffic asks with ?shedding=ready: shedding is said, not refused.
    const probe = await fetch(`${t.baseUrl}/readyz?shedding=ready`);
    expect(probe.status).toBe(200);
    expect(((await probe.json()) as Obj)["checks"]).toMatchObject({ shedding: true });
    const tasks = store.size;

    // New tasks: refused, with when to retry, in each binding's form.
    const refused = await newTask();
    expect(refused.retryAfter).toBe("2");
    expect(refused.body["error"]["code"]).toBe(-32603);
    expect(refused.body["error"]["message"]).toContain("this instance is shedding new tasks");
    expect(refused.body["error"]["data"]).toEqual({ reason: "overloaded", retryable: true, retryAfterSeconds: 2 });
    const run = await fetch(`${t.baseUrl}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ workflowId: "approval-gate", inputs: { text: "x" } }),
    });
    expect(run.status).toBe(503);
    expect(run.headers.get("retry-after")).toBe("2");
    expect(((await run.json()) as Obj)["error"]).toBe("unavailable");
    const grpc = createClient(A2AService, createGrpcTransport({ baseUrl: t.baseUrl }));
    const grpcErr = await grpc
      .sendMessage({
        message: {
          messageId: randomUUID(),
          role: Role.USER,
          parts: [{ content: { case: "text", value: "x" } }],
          metadata: { skillId: "approval-gate" },
        },
      })
      .catch((e: unknown) => e);
    expect((grpcErr as ConnectError).code).toBe(Code.Unavailable);
    expect(store.size).toBe(tasks);

    // What creates nothing is served: a read, the reply a waiting task waits for, a cancel.
    expect((await rpc("tasks/get", { id: waiting })).body["result"]["status"]["state"]).toBe("input-required");
    const reply = await rpc("message/send", {
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        taskId: waiting,
        parts: [{ kind: "data", data: { action: "accept" } }],
      },
    });
    expect(reply.body["result"]["status"]["state"]).toBe("completed");
    expect((await rpc("tasks/cancel", { id: other })).body["result"]["status"]["state"]).toBe("canceled");
    expect(await metric(t, "openwop_tenant_refusals_total", ['tenant="default"', 'reason="overload"'])).toBe(3);
    expect(await metric(t, "openwop_shedding", [])).toBe(1);

    // The store answers quickly again: the next window stops the shedding.
    store.pingMs = 0;
    await untilReady(true);
    expect((await newTask()).body["result"]["status"]["state"]).toBe("input-required");
  });

  it("a blocked event loop: the instance sheds new tasks while the delay lasts", async () => {
    t = await startTestApp({ OVERLOAD_EVENT_LOOP_DELAY_MS: "50", OVERLOAD_STORE_LATENCY_MS: "0" });
    // Something hogs the loop: 120 ms of busy work every 150 ms.
    const hog = setInterval(() => {
      const end = performance.now() + 120;
      while (performance.now() < end);
    }, 150);
    try {
      const report = await untilReady(false);
      expect(report["reason"]).toMatch(/event-loop delay p90 \d+ ms over OVERLOAD_EVENT_LOOP_DELAY_MS=50/);
      const refused = await newTask();
      expect(refused.body["error"]["data"]).toEqual({ reason: "overloaded", retryable: true, retryAfterSeconds: 2 });
    } finally {
      clearInterval(hog);
    }
    await untilReady(true);
    expect((await newTask()).body["result"]["status"]["state"]).toBe("input-required");
  });
});

/** The value of the series of `name` whose labels include `labels`. */
async function metric(t: TestApp, name: string, labels: string[]): Promise<number> {
  const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
  return line ? Number(line.split(" ").at(-1)) : Number.NaN;
}
