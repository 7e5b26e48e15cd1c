// Every metric the Grafana dashboards (deploy/grafana/) and the alert rules (deploy/prometheus/) query, checked
// against /metrics of a real host: parsed out of the PromQL with Prometheus's grammar, then looked for with the
// labels each query matches on or groups by. First on a host that has done nothing (the counters start at 0:
// docs/operating.md "Dashboards and alerts"), then after ordinary tasks: blocking sends, one with a push
// config delivered to a webhook, one calling a peer agent (a2a.invoke against the @a2a-js/sdk test peer), a get.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestPeer, type TestPeer } from "../support/a2a-peer.js";
import { jsonRpcCaller } from "../support/jsonrpc-caller.js";
import { parsePrometheusText, type PrometheusSample } from "../support/prometheus-text.js";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { dashboardQueries, missingFor, queriedSelectors, ruleQueries } from "../support/queried-metrics.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * Made by traffic, so absent until it comes: label sets nobody knows in advance (a call's outcome, a task's
 * from/to states, a tenant), and histograms (a latency exists once something took time). The rest must be
 * on /metrics from the start.
 */
const MADE_BY_TRAFFIC = new Set([
  "openwop_requests_total",
  "openwop_request_duration_seconds_bucket",
  "openwop_task_transitions_total",
  "openwop_tasks",
  "openwop_store_duration_seconds_bucket",
  "openwop_store_duration_seconds_count",
  "openwop_push_queue_lag_seconds_bucket",
  "openwop_peer_request_duration_seconds_bucket",
]);

const selectors = queriedSelectors([...dashboardQueries(), ...ruleQueries()]);

async function scrape(t: TestApp): Promise<PrometheusSample[]> {
  const res = await fetch(`${t.baseUrl}/metrics`);
  expect(res.status).toBe(200);
  return parsePrometheusText(await res.text());
}

function problems(samples: readonly PrometheusSample[], only: (metric: string) => boolean = () => true): string[] {
  return [
    ...new Set(
      selectors.filter((s) => only(s.metric)).flatMap((s) => missingFor(s, samples).map((p) => `${s.source}: ${p}`)),
    ),
  ];
}

describe("the metrics the dashboards and alert rules query", () => {
  let peer: TestPeer;
  let receiver: PushReceiver;
  let host: TestApp;

  beforeAll(async () => {
    peer = await startTestPeer();
    receiver = await new PushReceiver().start();
    host = await startTestApp({
      A2A_PEER_CARD_URL: peer.cardUrl,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
    });
  });
  afterAll(async () => {
    await host?.close();
    await receiver?.stop();
    await peer?.close();
  });

  it("are queried at all: the dashboards and rules parse, and name the metrics this test knows", () => {
    expect(selectors.length).toBeGreaterThan(40);
    const metrics = new Set(selectors.map((s) => s.metric));
    for (const made of MADE_BY_TRAFFIC)
      expect(metrics, `${made} is listed as made by traffic but queried nowhere`).toContain(made);
  });

  it("are on /metrics of a host that has done nothing yet, with their labels, but for those made by traffic", async () => {
    expect(problems(await scrape(host), (metric) => !MADE_BY_TRAFFIC.has(metric))).toEqual([]);
  });

  it("are all on /metrics, with their labels, once the host has done a few ordinary tasks", async () => {
    const caller = jsonRpcCaller(() => host.baseUrl);
    const echoed = await caller.start("hello", "echo");
    expect(echoed["status"].state).toBe("completed");
    await caller.get(echoed["id"] as string);

    const pushed = await fetch(`${host.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "notify me" }],
            metadata: { skillId: "echo" },
          },
          configuration: { pushNotificationConfig: { url: receiver.url() } },
        },
      }),
    });
    const pushedTask = ((await pushed.json()) as { result: { id: string } }).result;
    await waitFor(() => receiver.forTask(pushedTask.id).length > 0, 10_000, "a push delivery");

    const invoked = await caller.start("scenario:complete please", "conformance-a2a-task-roundtrip", {
      blocking: false,
    });
    await caller.waitFor(
      invoked["id"] as string,
      (task) => task["status"].state === "completed",
      "completed through the peer",
    );

    const samples = await scrape(host);
    expect(problems(samples)).toEqual([]);
    // And the new counts moved where the work happened: the peer calls, the delivery, the tasks per tenant.
    const value = (name: string, labels: Record<string, string>) =>
      samples
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0);
    expect(value("openwop_peer_requests_total", { transport: "http", outcome: "ok" })).toBeGreaterThanOrEqual(2);
    expect(value("openwop_push_deliveries_total", { outcome: "delivered", retry: "false" })).toBeGreaterThanOrEqual(1);
    expect(value("openwop_tasks", { tenant: "default", state: "completed" })).toBe(3);
  });
});
