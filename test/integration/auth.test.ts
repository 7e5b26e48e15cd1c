import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AService } from "../../src/gen/a2a/v1/a2a_pb.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];
const KEYS = {
  alice: "alice-key-0123456789abcdef",
  bob: "bob-key-0123456789abcdef",
  reader: "reader-key-0123456789abcdef",
};

describe("API keys, tenants and scopes on every binding", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      API_KEYS: JSON.stringify([
        { id: "alice", tenant: "acme", scopes: ALL, key: KEYS.alice },
        { id: "bob", tenant: "globex", scopes: ALL, key: KEYS.bob },
        { id: "reader", tenant: "acme", scopes: ["runs:read"], key: KEYS.reader },
      ]),
    });
  });
  afterAll(() => t.close());

  const rpc = async (method: string, params: unknown, key?: string) => {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return {
      status: res.status,
      headers: res.headers,
      body: (await res.json()) as { result?: any; error?: { code: number; message: string } },
    };
  };
  const send = (key: string, skillId = "approval-gate") =>
    rpc(
      "message/send",
      {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "hi" }],
          metadata: { skillId },
        },
      },
      key,
    );

  it("the card and discovery stay public and the card declares the scheme", async () => {
    const card = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(card["securitySchemes"]).toEqual({ apiKey: expect.objectContaining({ type: "http", scheme: "bearer" }) });
    expect(card["security"]).toEqual([{ apiKey: [] }]);
    expect((await fetch(`${t.baseUrl}/.well-known/openwop`)).status).toBe(200);
  });

  it("refuses missing and wrong keys with 401 on JSON-RPC, REST and gRPC", async () => {
    const none = await rpc("tasks/get", { id: "x" });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    expect(none.body.error?.message).toContain("missing credentials");
    const wrong = await rpc("tasks/get", { id: "x" }, "not-a-key-at-all-0000");
    expect(wrong.status).toBe(401);
    expect(wrong.body.error?.message).toBe("invalid API key");
    const rest = await fetch(`${t.baseUrl}/v1/tasks/x`);
    expect(rest.status).toBe(401);
    const state = await fetch(`${t.baseUrl}/v1/a2a/tasks/x`);
    expect(state.status).toBe(401);
    expect(await state.json()).toEqual({ error: "unauthenticated", message: expect.any(String) });
    const grpc = createClient(A2AService, createGrpcTransport({ baseUrl: t.baseUrl }));
    const err = await grpc.getTask({ name: "tasks/x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("a task of another tenant reads as not found, on every binding", async () => {
    const created = await send(KEYS.alice);
    const id = created.body.result.id as string;
    expect((await rpc("tasks/get", { id }, KEYS.alice)).body.result.id).toBe(id);
    expect((await rpc("tasks/get", { id }, KEYS.bob)).body.error?.code).toBe(-32001);
    expect((await rpc("tasks/cancel", { id }, KEYS.bob)).body.error?.code).toBe(-32001);
    const rest = await fetch(`${t.baseUrl}/v1/tasks/${id}`, { headers: { authorization: `Bearer ${KEYS.bob}` } });
    expect(rest.status).toBe(404);
    const grpc = createClient(
      A2AService,
      createGrpcTransport({
        baseUrl: t.baseUrl,
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${KEYS.bob}`);
            return next(req);
          },
        ],
      }),
    );
    const err = await grpc.getTask({ name: `tasks/${id}` }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("a missing scope is refused and changes nothing", async () => {
    const denied = await send(KEYS.reader);
    expect(denied.body.error?.message).toContain('lacks the "runs:create" scope');
    const created = await send(KEYS.alice);
    const id = created.body.result.id as string;
    const reply = await rpc(
      "message/send",
      {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          taskId: id,
          parts: [{ kind: "data", data: { action: "accept" } }],
        },
      },
      KEYS.reader,
    );
    expect(reply.body.error?.message).toContain("approvals:respond");
    expect((await rpc("tasks/get", { id }, KEYS.reader)).body.result.status.state).toBe("input-required");
  });

  it("decidedBy is the authenticated key, whatever the message claims", async () => {
    const created = await send(KEYS.alice);
    const id = created.body.result.id as string;
    const done = await rpc(
      "message/send",
      {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          taskId: id,
          parts: [{ kind: "data", data: { action: "accept", decidedBy: "the-ceo" } }],
        },
      },
      KEYS.alice,
    );
    expect(done.body.result.status.state).toBe("completed");
    const log = await t.store.readEvents(id, 0);
    expect(log.find((e) => e.type === "approval.received")?.payload["decidedBy"]).toBe("apikey:alice");
  });
});
