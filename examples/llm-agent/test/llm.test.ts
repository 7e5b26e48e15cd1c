// The `llm` node kind end to end, as a caller sees it: a real host (startHost) runs the kind from this example, a
// small fake model on loopback streams its answer as server-sent events, and a stock A2A client (@a2a-js/sdk,
// A2A 1.0) streaming the task sees each token arrive as an artifact chunk, in order, the last one marked as such.
// The model is reached through the host's egress guard: loopback only because the test sets the test-only
// HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS, and a host without it refuses the call.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { TaskState, type StreamResponse } from "@a2a-js/sdk";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import { startHost, type RunningHost } from "openwop-a2a-host";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLlmAgent } from "../src/agent.js";
import { llmNodeKind } from "../src/llm-node.js";

/** What the fake model was asked, and with which idempotency key. */
interface ModelCall {
  system: string;
  prompt: string;
  idempotencyKey: string | undefined;
}

/** A fake model: answers "You asked: <prompt>" word by word as SSE `data: {"token"}` events, 20 ms apart, then `[DONE]`. */
function startModel(calls: ModelCall[]): Promise<Server> {
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await text(req)) as { system: string; prompt: string };
    calls.push({ ...body, idempotencyKey: req.headers["idempotency-key"] as string | undefined });
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const token of tokensFor(body.prompt)) {
      res.write(`data: ${JSON.stringify({ token })}\n\n`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    res.end("data: [DONE]\n\n");
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** "You asked: what is it" → ["You", " asked:", " what", " is", " it"]. */
function tokensFor(prompt: string): string[] {
  return `You asked: ${prompt}`.split(/(?= )/);
}

async function text(req: IncomingMessage): Promise<string> {
  let body = "";
  for await (const chunk of req) body += String(chunk);
  return body;
}

function question(text: string): Parameters<Client["sendMessageStream"]>[0] {
  const part = { content: { $case: "text" as const, value: text }, metadata: undefined, filename: "", mediaType: "" };
  return {
    tenant: "",
    message: {
      messageId: randomUUID(),
      contextId: "",
      taskId: "",
      role: 1,
      parts: [part],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

/** The state a stream event carries, if any. */
function stateOf(event: StreamResponse): TaskState | undefined {
  const p = event.payload;
  return p?.$case === "task" ? p.value.status?.state : p?.$case === "statusUpdate" ? p.value.status?.state : undefined;
}

describe("the llm node kind, from outside the host's source", () => {
  const calls: ModelCall[] = [];
  let model: Server;
  let modelUrl: string;
  let agent: RunningHost;
  let client: Client;

  beforeAll(async () => {
    model = await startModel(calls);
    modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1/generate`;
    agent = await startLlmAgent({
      modelUrl,
      port: 0,
      logLevel: "silent",
      env: { STORE: "memory", HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true" },
    });
    client = await new ClientFactory().createFromUrl(agent.url);
  });

  afterAll(async () => {
    await agent?.close();
    model?.close();
  });

  it("streams the model's tokens to the caller as artifact chunks, in order, the last one marked", async () => {
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(question("what is a durable task"))) events.push(event);
    const expected = tokensFor("what is a durable task");

    const chunks = events.flatMap((e) => (e.payload?.$case === "artifactUpdate" ? [e.payload.value] : []));
    expect(chunks.map((c) => c.artifact?.parts[0]?.content)).toEqual(
      expected.map((value) => ({ $case: "text", value })),
    );
    expect(chunks.map((c) => c.append)).toEqual(expected.map((_, i) => i > 0));
    expect(chunks.map((c) => c.lastChunk)).toEqual(expected.map((_, i) => i === expected.length - 1));
    expect(new Set(chunks.map((c) => c.artifact?.artifactId))).toEqual(new Set(["answer.answer"]));
    // Each chunk is its own update, seen while the task was still working (not one batch at the end).
    const firstChunk = events.findIndex((e) => e.payload?.$case === "artifactUpdate");
    expect(events.slice(0, firstChunk).map(stateOf)).toContain(TaskState.TASK_STATE_WORKING);
    expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_COMPLETED);

    // The stored task holds the whole artifact and the node's output; the model got the prompt and an idempotency key.
    const taskId = events[0]?.payload?.$case === "task" ? events[0].payload.value.id : "";
    const task = await client.getTask({ tenant: "", id: taskId, historyLength: undefined });
    expect(task.artifacts[0]?.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("")).toBe(
      expected.join(""),
    );
    expect(calls.at(-1)).toEqual({
      system: "Answer in one short sentence.",
      prompt: "what is a durable task",
      idempotencyKey: `${taskId}:answer:1`,
    });
  });

  it("goes through the host's egress guard: without the test-only loopback setting the call is refused, and nothing reaches the model", async () => {
    const before = calls.length;
    const guarded = await startLlmAgent({ modelUrl, port: 0, logLevel: "silent", env: { STORE: "memory" } });
    try {
      const events: StreamResponse[] = [];
      const guardedClient = await new ClientFactory().createFromUrl(guarded.url);
      for await (const event of guardedClient.sendMessageStream(question("anyone there?"))) events.push(event);
      expect(stateOf(events.at(-1)!)).toBe(TaskState.TASK_STATE_FAILED);
      expect(JSON.stringify(events.at(-1))).toContain("egress_refused");
      expect(calls.length).toBe(before);
    } finally {
      await guarded.close();
    }
  });

  it("a kind named like a built-in one, or given twice, stops the start with every problem named", async () => {
    const llm = llmNodeKind({ modelUrl });
    const shadow = {
      ...llm,
      kind: "http" as const,
      schema: { ...llm.schema, properties: { ...llm.schema.properties, kind: { const: "http" } } },
    };
    await expect(
      startHost({ port: 0, logLevel: "silent", env: { STORE: "memory" }, nodeKinds: [llm, llm, shadow] }),
    ).rejects.toThrow(
      /option nodeKinds\[1\]: node kind "llm" is given twice[\s\S]*option nodeKinds\[2\]: node kind "http" is built in/,
    );
  });
});
