// Traces in the OpenTelemetry GenAI conventions (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental), across an
// a2a.invoke hop between two hosts of ours on loopback, each exporting to one OTLP/HTTP (JSON) receiver on loopback.
// The caller host runs a workflow of a handler, an http node (a small service on loopback) and an a2a.invoke node
// calling the peer host, named once per binding (JSON-RPC, gRPC, HTTP+JSON). Checked: ONE trace holds the caller's
// invoke_agent SERVER span → an execute_tool span per node → the invoke_agent CLIENT span of the peer call → (the
// wire's client span, which carries traceparent) → the peer's invoke_agent SERVER span, with the gen_ai attributes,
// and the message text in no attribute. A streamed message is an invoke_agent span too; a call that sends no message
// (tasks/get) keeps its RPC name. And a third host without the opt-in keeps the span names it always had.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTelemetry, type Telemetry } from "../../src/observability/telemetry.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import type { TaskStore } from "../../src/store/task-store.js";
import type { TaskHandler } from "../../src/workflows/workflow-types.js";
import { attributeOf, OtlpReceiver, SPAN_KIND, type ReceivedSpan } from "../support/otlp-receiver.js";
import { waitFor } from "../support/push-receiver.js";
import { freePort, TEST_BUILTIN_WORKFLOWS } from "../support/server-process.js";

const FAST = {
  A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
  A2A_PEER_POLL_MS: "25",
  A2A_PEER_RETRY_BASE_MS: "20",
  A2A_PEER_RETRY_MAX_MS: "40",
  A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
  HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true",
  BLOCKING_TIMEOUT_MS: "10000",
};

const BINDINGS = ["jsonrpc", "grpc", "http+json"] as const;

interface Host {
  app: App;
  telemetry: Telemetry;
  baseUrl: string;
}

describe("GenAI conventions in traces (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental), across an a2a.invoke hop", () => {
  const otlp = new OtlpReceiver();
  const hosts: Host[] = [];
  let service: Server;
  let peer: Host;
  let caller: Host;
  let plain: Host;
  let mongo: MongoClient;
  const dbName = `gen_ai_${randomUUID().slice(0, 8)}`;
  const handlers: Record<string, TaskHandler> = { lookup: async () => ({ output: { found: true } }) };

  let endpoint: string;
  async function host(
    serviceName: string,
    env: Record<string, string>,
    optIn: boolean,
    store: TaskStore = new MemoryTaskStore(),
  ): Promise<Host> {
    const telemetry = await createTelemetry({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_BSP_SCHEDULE_DELAY: "50",
        OTEL_SERVICE_NAME: serviceName,
        // A list, as the variable is: other categories beside ours are fine.
        ...(optIn ? { OTEL_SEMCONV_STABILITY_OPT_IN: "http, gen_ai_latest_experimental" } : {}),
      },
    });
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: baseUrl,
      LOG_LEVEL: "silent",
      TIMER_POLL_MS: "50",
      SHUTDOWN_GRACE_MS: "1000",
      BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
      ...FAST,
      ...env,
    });
    const app = await createApp({
      config,
      logger: createLogger("silent"),
      store,
      durableStore: store.kind === "mongodb",
      telemetry,
      handlers,
    });
    await app.listen();
    const started = { app, telemetry, baseUrl };
    hosts.push(started);
    return started;
  }

  beforeAll(async () => {
    endpoint = await otlp.start();
    // The http node's service: answers every call with an output.
    service = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ output: { price: 42 } })),
    );
    await new Promise<void>((r) => service.listen(0, "127.0.0.1", r));
    const serviceUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}/price`;

    // The peer keeps durable tasks (MongoDB), so it takes the caller's A2A 1.0 `returnImmediately` send.
    mongo = await MongoClient.connect(inject("mongoUri"));
    const store = new MongoTaskStore(mongo, mongo.db(dbName));
    await store.init();
    peer = await host("peer-host", { AGENT_NAME: "Peer agent" }, true, store);
    const cardUrl = `${peer.baseUrl}/.well-known/agent-card.json`;
    const peers = Object.fromEntries(
      BINDINGS.map((binding) => [`peer-${binding.replace("+", "-")}`, { cardUrl, binding }]),
    );
    const dir = await mkdtemp(join(tmpdir(), "gen-ai-traces-"));
    for (const name of Object.keys(peers)) {
      const nodes = [
        { kind: "task", id: "look-up", handler: "lookup" },
        { kind: "http", id: "price", url: serviceUrl, retry: { maxAttempts: 1 } },
        { kind: "a2a.invoke", id: "ask-peer", peer: name, skillId: "echo" },
      ];
      await writeFile(
        join(dir, `via-${name}.json`),
        JSON.stringify({
          id: `via-${name}`,
          name: `Via ${name}`,
          description: `A handler, an http node, then the peer over ${name}.`,
          nodes,
        }),
      );
    }
    const callerEnv = { WORKFLOWS_DIR: dir, A2A_PEERS: JSON.stringify(peers) };
    caller = await host("caller-host", { ...callerEnv, AGENT_NAME: "Caller agent" }, true);
    plain = await host("plain-host", { ...callerEnv, AGENT_NAME: "Plain agent" }, false);
  });

  afterAll(async () => {
    for (const h of hosts.reverse()) {
      await h.app.close();
      await h.telemetry.shutdown();
    }
    await new Promise<void>((r) => (service ? service.close(() => r()) : r()));
    await otlp.stop();
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  /** Sends `text` to `skillId` over JSON-RPC (blocking) under a trace of our own; its task, the trace id and our span id. */
  async function send(
    to: Host,
    skillId: string,
    text: string,
  ): Promise<{
    task: { id: string; contextId: string; status: { state: string } };
    traceId: string;
    callerSpanId: string;
  }> {
    const traceId = randomBytes(16).toString("hex");
    const callerSpanId = randomBytes(8).toString("hex");
    const res = await fetch(`${to.baseUrl}/a2a/jsonrpc`, {
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
            parts: [{ kind: "text", text }],
            metadata: { skillId },
          },
          configuration: { blocking: true },
        },
      }),
    });
    const body = (await res.json()) as {
      result?: { id: string; contextId: string; status: { state: string } };
      error?: unknown;
    };
    expect(body.error).toBeUndefined();
    return { task: body.result!, traceId, callerSpanId };
  }

  const parentOf = (spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan | undefined =>
    spans.find((s) => s.spanId === span.parentSpanId);

  for (const binding of BINDINGS) {
    const peerName = `peer-${binding.replace("+", "-")}`;
    it(`one trace over ${binding}: invoke_agent (server) → execute_tool per node → invoke_agent (client) → the peer's invoke_agent (server)`, async () => {
      const text = `hello over ${binding} ${randomUUID()}`;
      const { task, traceId, callerSpanId } = await send(caller, `via-${peerName}`, text);
      expect(task.status.state, JSON.stringify(task)).toBe("completed");
      // The peer's span of the send that created its task; the caller's server span ends last, the export is batched.
      const peerServer = (spans: ReceivedSpan[]) =>
        spans.find(
          (s) =>
            s.service === "peer-host" &&
            s.kind === SPAN_KIND.SERVER &&
            s.name === "invoke_agent Peer agent" &&
            attributeOf(s, "a2a.task.id") !== undefined,
        );
      await waitFor(
        () =>
          peerServer(otlp.inTrace(traceId)) &&
          otlp.inTrace(traceId).some((s) => s.service === "caller-host" && s.kind === SPAN_KIND.SERVER),
        10_000,
        "both hosts' invoke_agent spans",
      );
      const spans = otlp.inTrace(traceId);

      // The caller's server span: the agent invoked, its conversation (the A2A contextId) and task.
      const server = spans.find((s) => s.service === "caller-host" && s.kind === SPAN_KIND.SERVER)!;
      expect(server.name).toBe("invoke_agent Caller agent");
      expect(server.parentSpanId).toBe(callerSpanId);
      expect(attributeOf(server, "gen_ai.operation.name")).toBe("invoke_agent");
      expect(attributeOf(server, "gen_ai.provider.name")).toBe("openwop");
      expect(attributeOf(server, "gen_ai.agent.name")).toBe("Caller agent");
      expect(attributeOf(server, "gen_ai.agent.id")).toBe(`${caller.baseUrl}/.well-known/agent-card.json`);
      expect(attributeOf(server, "gen_ai.conversation.id")).toBe(task.contextId);
      expect(attributeOf(server, "a2a.task.id")).toBe(task.id);
      expect(attributeOf(server, "rpc.method")).toBe("message/send");

      // An execute_tool span per node, each a descendant of the server span, its call id the node's idempotency key.
      const descends = (span: ReceivedSpan, ancestor: ReceivedSpan): boolean => {
        for (let at = parentOf(spans, span); at; at = parentOf(spans, at)) if (at === ancestor) return true;
        return false;
      };
      const tools = new Map(
        spans
          .filter((s) => s.service === "caller-host" && attributeOf(s, "gen_ai.operation.name") === "execute_tool")
          .map((s) => [attributeOf(s, "gen_ai.tool.name"), s]),
      );
      expect([...tools.keys()].sort()).toEqual(["ask-peer", "lookup", "price"]);
      for (const [tool, type, nodeId, nodeKind] of [
        ["lookup", "function", "look-up", "task"],
        ["price", "extension", "price", "http"],
        ["ask-peer", "extension", "ask-peer", "a2a.invoke"],
      ] as const) {
        const span = tools.get(tool)!;
        expect(span.name).toBe(`execute_tool ${tool}`);
        expect(span.kind).toBe(SPAN_KIND.INTERNAL);
        expect(attributeOf(span, "gen_ai.tool.type")).toBe(type);
        expect(attributeOf(span, "gen_ai.tool.call.id")).toBe(`${task.id}:${nodeId}:1`);
        expect(attributeOf(span, "a2a.task.id")).toBe(task.id);
        expect(attributeOf(span, "openwop.node.type")).toBe(nodeKind);
        expect(descends(span, server), `${tool} under the server span`).toBe(true);
      }

      // The peer's server span that took the message (a send refused first, e.g. for its push callback, is a span of its
      // own) joins the trace through the wire's client span, which carried its traceparent, under an invoke_agent CLIENT
      // span, itself a child of the a2a.invoke node's execute_tool span.
      const remote = peerServer(spans)!;
      const wire = parentOf(spans, remote)!;
      expect(wire.service).toBe("caller-host");
      expect(wire.kind).toBe(SPAN_KIND.CLIENT);
      expect(wire.name).toMatch(/^peer (POST|SendMessage)$/);
      const client = parentOf(spans, wire)!;
      expect(client.name).toBe(`invoke_agent ${peerName}`);
      expect(client.kind).toBe(SPAN_KIND.CLIENT);
      expect(client.parentSpanId).toBe(tools.get("ask-peer")!.spanId);
      expect(attributeOf(client, "gen_ai.operation.name")).toBe("invoke_agent");
      expect(attributeOf(client, "gen_ai.provider.name")).toBe("openwop");
      expect(attributeOf(client, "gen_ai.agent.name")).toBe(peerName);
      expect(attributeOf(client, "gen_ai.agent.id")).toBe(`${peer.baseUrl}/.well-known/agent-card.json`);
      expect(attributeOf(client, "server.address")).toBe("127.0.0.1");
      expect(attributeOf(client, "server.port")).toBe(Number(new URL(peer.baseUrl).port));
      expect(attributeOf(remote, "gen_ai.operation.name")).toBe("invoke_agent");
      expect(attributeOf(remote, "gen_ai.agent.name")).toBe("Peer agent");
      expect(attributeOf(remote, "gen_ai.agent.id")).toBe(`${peer.baseUrl}/.well-known/agent-card.json`);
      // Both ends of the call name the same task and conversation: the peer's.
      const peerTaskId = attributeOf(remote, "a2a.task.id");
      expect(peerTaskId).not.toBe(task.id);
      expect(attributeOf(client, "a2a.task.id")).toBe(peerTaskId);
      expect(attributeOf(remote, "gen_ai.conversation.id")).toEqual(expect.any(String));
      expect(attributeOf(client, "gen_ai.conversation.id")).toBe(attributeOf(remote, "gen_ai.conversation.id"));
      // Every message the peer was sent came from an invoke_agent CLIENT span of this trace.
      for (const invoked of spans.filter((s) => s.service === "peer-host" && s.name === "invoke_agent Peer agent")) {
        expect(parentOf(spans, parentOf(spans, invoked)!)?.name).toBe(`invoke_agent ${peerName}`);
      }

      // No message content in any span of either host.
      for (const span of spans) expect(JSON.stringify(span.attributes), span.name).not.toContain(text);
    });
  }

  it("a streamed message (message/stream) is an invoke_agent span too, its conversation the task's", async () => {
    const traceId = randomBytes(16).toString("hex");
    const res = await fetch(`${caller.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "text/event-stream",
        traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/stream",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "streamed hello" }],
            metadata: { skillId: "echo" },
          },
        },
      }),
    });
    const events = (await res.text())
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map(
        (l) => JSON.parse(l.slice(5)) as { result: { kind: string; id?: string; taskId?: string; contextId: string } },
      );
    const first = events[0]!.result;
    const taskId = first.kind === "task" ? first.id : first.taskId;
    expect(taskId).toEqual(expect.any(String));
    await waitFor(
      () => otlp.inTrace(traceId).some((s) => s.service === "caller-host" && s.kind === SPAN_KIND.SERVER),
      10_000,
      "the stream's server span",
    );
    const server = otlp.inTrace(traceId).find((s) => s.service === "caller-host" && s.kind === SPAN_KIND.SERVER)!;
    expect(server.name).toBe("invoke_agent Caller agent");
    expect(attributeOf(server, "rpc.method")).toBe("message/stream");
    expect(attributeOf(server, "a2a.task.id")).toBe(taskId);
    expect(attributeOf(server, "gen_ai.conversation.id")).toBe(first.contextId);
    expect(
      otlp
        .inTrace(traceId)
        .some((s) => s.name === "execute_tool echo" && attributeOf(s, "gen_ai.tool.type") === "function"),
    ).toBe(true);
  });

  it("a call that sends no message (tasks/get) keeps its RPC name under the opt-in", async () => {
    const { task } = await send(caller, "echo", "hello");
    const traceId = randomBytes(16).toString("hex");
    await fetch(`${caller.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: task.id } }),
    });
    await waitFor(() => otlp.inTrace(traceId).some((s) => s.kind === SPAN_KIND.SERVER), 10_000, "the tasks/get span");
    const server = otlp.inTrace(traceId).find((s) => s.kind === SPAN_KIND.SERVER)!;
    expect(server.name).toBe("jsonrpc tasks/get");
    expect(attributeOf(server, "a2a.task.id")).toBe(task.id);
    expect(server.attributes.filter((a) => a.key.startsWith("gen_ai."))).toEqual([]);
  });

  it("without the opt-in, a host's spans keep their names and carry no gen_ai attribute (the peer's, opted in, still joins the trace)", async () => {
    const { task, traceId } = await send(plain, "via-peer-jsonrpc", `hello plain ${randomUUID()}`);
    expect(task.status.state, JSON.stringify(task)).toBe("completed");
    const peerInvoked = (s: ReceivedSpan) =>
      s.service === "peer-host" &&
      s.kind === SPAN_KIND.SERVER &&
      attributeOf(s, "gen_ai.operation.name") === "invoke_agent" &&
      attributeOf(s, "a2a.task.id") !== undefined;
    await waitFor(
      () =>
        otlp.inTrace(traceId).some(peerInvoked) &&
        otlp.inTrace(traceId).some((s) => s.service === "plain-host" && s.kind === SPAN_KIND.SERVER),
      10_000,
      "both hosts' server spans",
    );
    const spans = otlp.inTrace(traceId);
    const ours = spans.filter((s) => s.service === "plain-host");
    const names = ours.map((s) => s.name);
    expect(names).toContain("jsonrpc message/send");
    expect(names).toContain("node lookup");
    expect(names).toContain("peer POST");
    expect(names.filter((n) => n.startsWith("invoke_agent") || n.startsWith("execute_tool"))).toEqual([]);
    for (const span of ours)
      expect(
        span.attributes.filter((a) => a.key.startsWith("gen_ai.")).map((a) => a.key),
        span.name,
      ).toEqual([]);
    const server = ours.find((s) => s.name === "jsonrpc message/send")!;
    expect(server.kind).toBe(SPAN_KIND.SERVER);
    expect(attributeOf(server, "a2a.task.id")).toBe(task.id);
    // The peer (opted in) names its own span in the conventions, under the plain host's `peer POST`.
    const remote = spans.find(peerInvoked)!;
    expect(remote.name).toBe("invoke_agent Peer agent");
    expect(parentOf(spans, remote)?.name).toBe("peer POST");
  });
});
