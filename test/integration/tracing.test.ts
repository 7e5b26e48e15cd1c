import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTelemetry, type Telemetry } from "../../src/observability/telemetry.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { freePort } from "../support/server-process.js";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** An OTLP/HTTP (JSON) trace receiver on loopback: what a collector would get. */
class OtlpReceiver {
  readonly spans: OtlpSpan[] = [];
  readonly contentTypes: string[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        this.contentTypes.push(String(req.headers["content-type"]));
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
        };
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) this.spans.push(...ss.spans);
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A minimal A2A 0.3 agent on loopback: its card, and JSON-RPC message/send answering a completed task. */
class TracedPeer {
  readonly traceparents: string[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      this.traceparents.push(String(req.headers["traceparent"] ?? ""));
      const port = (this.server.address() as AddressInfo).port;
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            name: "traced peer",
            url: `http://127.0.0.1:${port}/rpc`,
            preferredTransport: "JSONRPC",
            protocolVersion: "0.3.0",
          }),
        );
        return;
      }
      const rpc = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: unknown };
      const task = {
        kind: "task",
        id: randomUUID(),
        contextId: randomUUID(),
        status: { state: "completed", timestamp: new Date().toISOString() },
        artifacts: [],
      };
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result: task }));
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/.well-known/agent-card.json`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const attr = (span: OtlpSpan, key: string): unknown => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};

describe("OpenTelemetry traces over OTLP/HTTP", () => {
  const otlp = new OtlpReceiver();
  const webhook = new PushReceiver();
  const peer = new TracedPeer();
  let telemetry: Telemetry;
  let app: App;
  let base: string;

  beforeAll(async () => {
    const endpoint = await otlp.start();
    await webhook.start();
    const peerCard = await peer.start();
    telemetry = await createTelemetry({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "50" },
    });
    const port = await freePort();
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "silent",
      BUILTIN_WORKFLOWS: "demo,conformance",
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PUSH_SIGNING_KEY: `signing-${randomBytes(16).toString("hex")}`,
      A2A_PEER_CARD_URL: peerCard,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
    });
    app = await createApp({
      config,
      logger: createLogger("silent"),
      store: new MemoryTaskStore(),
      durableStore: false,
      telemetry,
    });
    await app.listen();
    base = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await app.close();
    await telemetry.shutdown();
    await webhook.stop();
    await peer.stop();
    await otlp.stop();
  });

  it("continues the caller's traceparent: inbound call → store write → push delivery, with traceparent on the webhook POST", async () => {
    const traceId = randomBytes(16).toString("hex");
    const callerSpanId = randomBytes(8).toString("hex");
    const res = await fetch(`${base}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "Send the report" }],
            metadata: { skillId: "approval-gate" },
          },
          configuration: { pushNotificationConfig: { url: webhook.url() } },
        },
      }),
    });
    const sent = (await res.json()) as { result: { id: string; status: { state: string } } };
    expect(sent.result.status.state).toBe("input-required");
    const taskId = sent.result.id;

    const hit = await waitFor(() => webhook.hits[0], 10_000, "the webhook POST");
    const webhookParent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(String(hit.headers["traceparent"]));
    expect(webhookParent?.[1]).toBe(traceId);

    const inTrace = () => otlp.spans.filter((s) => s.traceId === traceId);
    await waitFor(
      () => inTrace().some((s) => s.name === "push.deliver") && inTrace().some((s) => s.kind === 2),
      10_000,
      "the exported spans",
    );
    expect(otlp.contentTypes[0]).toMatch(/application\/json/);
    const spans = inTrace();
    const byId = new Map(spans.map((s) => [s.spanId, s]));

    const server = spans.find((s) => s.kind === 2)!; // SPAN_KIND_SERVER
    expect(server.parentSpanId).toBe(callerSpanId);
    expect(attr(server, "rpc.method")).toBe("message/send");
    expect(attr(server, "rpc.system")).toBe("jsonrpc");
    expect(attr(server, "a2a.version")).toBe("0.3");
    expect(attr(server, "a2a.task.id")).toBe(taskId);
    expect(attr(server, "openwop.tenant")).toBe("default");
    expect(attr(server, "openwop.outcome")).toBe("200");

    // The task's writes are children of the call that made them.
    const create = spans.find((s) => s.name === "store.create")!;
    expect(create.parentSpanId).toBe(server.spanId);
    expect(attr(create, "a2a.task.id")).toBe(taskId);
    // Tracing keeps the blocking send's one-write path (the approval-gate's handlers are pure): the create holds
    // the whole run up to its wait, as it does untraced; no commit follows it.
    expect(spans.filter((s) => s.name === "store.commit")).toEqual([]);

    // The delivery belongs to the same trace, descends from the inbound call, and is the webhook request's parent.
    const push = spans.find((s) => s.name === "push.deliver")!;
    expect(push.kind).toBe(3); // SPAN_KIND_CLIENT
    expect(attr(push, "a2a.task.id")).toBe(taskId);
    expect(webhookParent?.[2]).toBe(push.spanId);
    let ancestor: OtlpSpan | undefined = push;
    while (ancestor && ancestor !== server)
      ancestor = ancestor.parentSpanId ? byId.get(ancestor.parentSpanId) : undefined;
    expect(ancestor).toBe(server);

    // Node executions are spans too.
    expect(spans.some((s) => s.name.startsWith("node ") && attr(s, "a2a.task.id") === taskId)).toBe(true);
  });

  it("propagates the trace to the remote agent of an a2a.invoke node (card read and JSON-RPC call)", async () => {
    const traceId = randomBytes(16).toString("hex");
    const res = await fetch(`${base}/a2a/jsonrpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "relay" }],
            metadata: { skillId: "conformance-a2a-task-roundtrip" },
          },
        },
      }),
    });
    const sent = (await res.json()) as { result: { status: { state: string } } };
    expect(sent.result.status.state).toBe("completed");
    expect(peer.traceparents.length).toBeGreaterThanOrEqual(2);
    for (const header of peer.traceparents) expect(header).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    await waitFor(
      () => otlp.spans.filter((s) => s.traceId === traceId && s.name.startsWith("peer ")).length >= 2,
      10_000,
      "the peer client spans",
    );
    const peerSpanIds = new Set(
      otlp.spans.filter((s) => s.traceId === traceId && s.name.startsWith("peer ")).map((s) => s.spanId),
    );
    // Each request's parent is the client span that made it.
    for (const header of peer.traceparents) expect(peerSpanIds.has(header.split("-")[2]!)).toBe(true);
  });
});
