// A missing scope, on every binding, for an API key and for an OIDC token (docs/security.md "Refusals"): HTTP
// 403 with RFC 6750's insufficient_scope challenge to a bearer caller (JSON-RPC too, body still a JSON-RPC
// error), PERMISSION_DENIED on gRPC, Connect and gRPC-Web, unary and streaming; the message names the
// credential as it was presented. Nothing is created by a refused send.
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2AService as V10Service, Role } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const AUDIENCE = "scope-refusals";
const READER_KEY = "reader-key-0123456789abcdef";
// An OIDC host names its RFC 9728 protected-resource metadata in the challenge (OpenWOP v2 identity.md §2.5).
const challengeOf = (t: TestApp): string =>
  `Bearer realm="openwop-a2a-host", error="insufficient_scope", scope="runs:create", resource_metadata="${t.baseUrl}/.well-known/oauth-protected-resource"`;

describe("a missing scope on every binding", () => {
  let idp: OidcIssuer;
  let t: TestApp;
  let readerToken: string;
  beforeAll(async () => {
    idp = await OidcIssuer.start();
    t = await startTestApp({
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_OIDC_AUDIENCE: AUDIENCE,
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
      API_KEYS: JSON.stringify([{ id: "reader", tenant: "acme", scopes: ["runs:read"], key: READER_KEY }]),
    });
    readerToken = await idp.token({ sub: "user-7", aud: AUDIENCE, tenant: "acme", scope: "openid runs:read" });
  });
  afterAll(async () => {
    await t?.close();
    await idp?.close();
  });

  /** How the caller presented itself, and the words its refusal must use. */
  const callers: Array<[string, () => Record<string, string>, string]> = [
    [
      "an API key",
      () => ({ authorization: `Bearer ${READER_KEY}` }),
      'the API key "reader" lacks the "runs:create" scope',
    ],
    [
      "an OIDC token",
      () => ({ authorization: `Bearer ${readerToken}` }),
      'the access token of "user-7" lacks the "runs:create" scope',
    ],
  ];

  const v03Message = () => ({
    kind: "message",
    messageId: randomUUID(),
    role: "user",
    parts: [{ kind: "text", text: "hi" }],
    metadata: { skillId: "echo" },
  });
  const v03ProtoJson = () => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    content: [{ text: "hi" }],
    metadata: { skillId: "echo" },
  });
  const v10Message = () => ({
    messageId: randomUUID(),
    role: "ROLE_USER",
    parts: [{ text: "hi" }],
    metadata: { skillId: "echo" },
  });

  async function post(
    path: string,
    body: unknown,
    headers: Record<string, string>,
  ): Promise<{ status: number; challenge: string | null; contentType: string | null; body: Obj }> {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      challenge: res.headers.get("www-authenticate"),
      contentType: res.headers.get("content-type"),
      body: (await res.json()) as Obj,
    };
  }

  async function tasksOfTenant(): Promise<number> {
    return (await t.store.list({ tenant: "acme", limit: 100 })).records.length;
  }

  describe.each(callers)("%s", (_who, headers, words) => {
    it.each([
      ["0.3 message/send", "message/send"],
      ["0.3 message/stream", "message/stream"],
    ])("JSON-RPC %s: 403, the challenge, -32600 with the request's id", async (_name, method) => {
      const answer = await post(
        "/a2a/jsonrpc",
        { jsonrpc: "2.0", id: 7, method, params: { message: v03Message() } },
        headers(),
      );
      expect(answer.status).toBe(403);
      expect(answer.challenge).toBe(challengeOf(t));
      expect(answer.contentType).toBe("application/json");
      expect(answer.body).toEqual({
        jsonrpc: "2.0",
        id: 7,
        error: { code: -32600, message: words, data: { requiredScope: "runs:create" } },
      });
    });

    it.each([
      ["1.0 SendMessage", "SendMessage"],
      ["1.0 SendStreamingMessage", "SendStreamingMessage"],
    ])("JSON-RPC %s: 403, the challenge, -32600 with ErrorInfo PERMISSION_DENIED", async (_name, method) => {
      const answer = await post(
        "/a2a/jsonrpc",
        { jsonrpc: "2.0", id: "r1", method, params: { message: v10Message() } },
        { "a2a-version": "1.0", ...headers() },
      );
      expect(answer.status).toBe(403);
      expect(answer.challenge).toBe(challengeOf(t));
      expect(answer.body["id"]).toBe("r1");
      expect(answer.body["error"]).toMatchObject({
        code: -32600,
        message: words,
        data: [{ reason: "PERMISSION_DENIED", metadata: { requiredScope: "runs:create" } }],
      });
    });

    it.each([["/message:send"], ["/message:stream"]])(
      "HTTP+JSON 1.0 %s: 403, the challenge, status PERMISSION_DENIED",
      async (path) => {
        const answer = await post(path, { message: v10Message() }, { "a2a-version": "1.0", ...headers() });
        expect(answer.status).toBe(403);
        expect(answer.challenge).toBe(challengeOf(t));
        expect(answer.body["error"]).toMatchObject({ code: 403, status: "PERMISSION_DENIED", message: words });
      },
    );

    it("HTTP+JSON 0.3 /v1/message:send: 403, the challenge, -32600 in the body", async () => {
      const answer = await post("/v1/message:send", { message: v03ProtoJson() }, headers());
      expect(answer.status).toBe(403);
      expect(answer.challenge).toBe(challengeOf(t));
      expect(answer.body).toEqual({ code: -32600, message: words, data: { requiredScope: "runs:create" } });
    });

    it("OpenWOP REST POST /v1/runs: 403, the challenge, the forbidden envelope", async () => {
      const answer = await post("/v1/runs", { workflowId: "echo", inputs: { text: "hi" } }, headers());
      expect(answer.status).toBe(403);
      expect(answer.challenge).toBe(challengeOf(t));
      expect(answer.body).toEqual({ error: "forbidden", message: words, details: { requiredScope: "runs:create" } });
    });

    it("Connect unary as plain HTTP: 403 with code permission_denied (Connect's own shape, no challenge)", async () => {
      const answer = await post(
        "/lf.a2a.v1.A2AService/SendMessage",
        { message: v10Message() },
        { "a2a-version": "1.0", ...headers() },
      );
      expect(answer.status).toBe(403);
      expect(answer.challenge).toBeNull();
      expect(answer.body).toMatchObject({ code: "permission_denied", message: words });
    });

    const transports: Array<[string, () => Transport]> = [
      ["Connect", () => createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1" })],
      ["gRPC", () => createGrpcTransport({ baseUrl: t.baseUrl })],
      ["gRPC-Web", () => createGrpcWebTransport({ baseUrl: t.baseUrl, httpVersion: "1.1" })],
    ];
    it.each(transports)("%s, unary and streaming: PERMISSION_DENIED with the same words", async (_name, transport) => {
      const client = createClient(V10Service, transport());
      const request = () => ({
        message: {
          messageId: randomUUID(),
          role: Role.USER,
          parts: [{ content: { case: "text" as const, value: "hi" } }],
          metadata: { skillId: "echo" },
        },
      });
      const options = { headers: { "a2a-version": "1.0", ...headers() } };
      const unary = await client.sendMessage(request(), options).catch((e: unknown) => e);
      expect(unary).toBeInstanceOf(ConnectError);
      expect((unary as ConnectError).code).toBe(Code.PermissionDenied);
      expect((unary as ConnectError).rawMessage).toBe(words);
      const streamed = await (async () => {
        for await (const _event of client.sendStreamingMessage(request(), options)) return "an event";
        return "no error";
      })().catch((e: unknown) => e);
      expect(streamed).toBeInstanceOf(ConnectError);
      expect((streamed as ConnectError).code).toBe(Code.PermissionDenied);
      expect((streamed as ConnectError).rawMessage).toBe(words);
    });
  });

  it("the same key as X-API-Key: 403 with the same words, and no bearer challenge (it sent no bearer)", async () => {
    const answer = await post(
      "/a2a/jsonrpc",
      { jsonrpc: "2.0", id: 1, method: "message/send", params: { message: v03Message() } },
      { "x-api-key": READER_KEY },
    );
    expect(answer.status).toBe(403);
    expect(answer.challenge).toBeNull();
    expect(answer.body["error"]).toMatchObject({
      code: -32600,
      message: 'the API key "reader" lacks the "runs:create" scope',
    });
  });

  it("refused sends create nothing; the scope the caller has still works", async () => {
    expect(await tasksOfTenant()).toBe(0);
    const read = await post(
      "/a2a/jsonrpc",
      { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { id: "no-such-task" } },
      { authorization: `Bearer ${READER_KEY}` },
    );
    expect(read.status).toBe(200);
    expect(read.body["error"]).toMatchObject({ code: -32001 });
  });
});
