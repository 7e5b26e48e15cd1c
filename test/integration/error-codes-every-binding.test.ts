import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { DomainError, ERROR_CODES, type ErrorCode } from "../../src/domain/errors.js";
import { A2AService as V03Service } from "../../src/gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service } from "../../src/gen/lf/a2a/v1/a2a_pb.js";
import { createLogger } from "../../src/observability/logger.js";
import { MemoryPushConfigStore } from "../../src/store/memory-push-config-store.js";
import type { PushConfigRecord, PushDeadLetter } from "../../src/store/push-config-store.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { statusesOf, WIRE_CODES, type WireCodes } from "../../src/transport/error-codes.js";
import { versionModule } from "../../src/a2a/versions.js";

/**
 * Every domain error code through every binding, against the real server: each binding must answer the
 * code, status and shape that the one table (`WIRE_CODES`) gives it. The errors are provoked by a real
 * push-config store that fails on demand: reading config `raise.<code>` (or dead letters of task
 * `raise.<code>`) raises that DomainError deep inside the service, as a failing store would; `internal`
 * raises a plain Error, which must leave as "Internal error".
 */
const RAISE = "raise.";

function raised(key: string | undefined): Error | undefined {
  if (!key?.startsWith(RAISE)) return undefined;
  const code = key.slice(RAISE.length) as ErrorCode;
  return code === "internal"
    ? new Error("the store broke (a cause only the log may see)")
    : new DomainError(code, `raised ${code}`);
}

class FailingPushConfigStore extends MemoryPushConfigStore {
  override async get(taskId: string, configId: string): Promise<PushConfigRecord | null> {
    const err = raised(configId);
    if (err) throw err;
    return super.get(taskId, configId);
  }

  override async listDeadLetters(
    tenant: string,
    filter: { taskId?: string; limit: number },
  ): Promise<PushDeadLetter[]> {
    const err = raised(filter.taskId);
    if (err) throw err;
    return super.listDeadLetters(tenant, filter);
  }
}

/** `NOT_FOUND` → Code.NotFound. */
function connectCode(grpc: WireCodes["grpc"]): Code {
  const name = grpc
    .toLowerCase()
    .split("_")
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("");
  return Code[name as keyof typeof Code];
}

function errorInfoReason(err: ConnectError): string | undefined {
  const detail = err.details.find((d) => "type" in d && d.type === "google.rpc.ErrorInfo") as
    { value: Uint8Array } | undefined;
  if (!detail) return undefined;
  const reader = new BinaryReader(detail.value);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) return reader.string();
    reader.skip(wireType);
  }
  return undefined;
}

type Obj = Record<string, any>;

describe("every domain error code on every binding, from the one table", () => {
  let app: App;
  let baseUrl: string;
  let taskId: string;
  const v10 = { "a2a-version": "1.0" };

  beforeAll(async () => {
    const config = loadConfig({
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "silent",
      PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PUSH_SIGNING_KEY: randomBytes(32).toString("hex"),
    });
    app = await createApp({
      config,
      logger: createLogger(config.logLevel),
      store: new MemoryTaskStore(),
      durableStore: false,
      pushConfigs: new FailingPushConfigStore(),
    });
    const address: AddressInfo = await app.listen();
    baseUrl = `http://127.0.0.1:${address.port}`;
    const sent = await jsonRpc("message/send", {
      message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "hi" }] },
    });
    taskId = sent.body.result.id as string;
  });
  afterAll(async () => {
    await app?.close();
  });

  async function jsonRpc(
    method: string,
    params: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Obj }> {
    const res = await fetch(`${baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return { status: res.status, body: (await res.json()) as Obj };
  }

  async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Obj }> {
    const res = await fetch(`${baseUrl}${path}`, { headers });
    return { status: res.status, body: (await res.json()) as Obj };
  }

  async function connectError(promise: Promise<unknown>): Promise<ConnectError> {
    const err = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(err)}`);
    return err;
  }

  const message = (code: ErrorCode) => (code === "internal" ? "Internal error" : `raised ${code}`);
  const reasonOf = (code: ErrorCode) => WIRE_CODES[code].reason ?? code.toUpperCase().replace(/-/g, "_");

  const rpcTransports: Array<[string, () => Transport]> = [
    ["Connect", () => createConnectTransport({ baseUrl, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl })],
    ["gRPC-Web", () => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
  ];

  describe.each(ERROR_CODES.map((code) => [code]))("%s", (code) => {
    const codes = WIRE_CODES[code];
    const configId = `${RAISE}${code}`;

    it("JSON-RPC 0.3: HTTP 200 (a refusal its own status), the table's JSON-RPC code", async () => {
      const { status, body } = await jsonRpc("tasks/pushNotificationConfig/get", {
        id: taskId,
        pushNotificationConfigId: configId,
      });
      expect(status).toBe(codes.refusal ? codes.http : 200);
      expect(body["error"]).toMatchObject({ code: codes.jsonRpc, message: message(code) });
    });

    it("JSON-RPC 1.0: HTTP 200 (a refusal its own status), the table's JSON-RPC code and ErrorInfo reason", async () => {
      const { status, body } = await jsonRpc("GetTaskPushNotificationConfig", { taskId, id: configId }, v10);
      expect(status).toBe(codes.refusal ? statusesOf(code, versionModule("1.0").errors.statuses).http : 200);
      expect(body["error"]).toMatchObject({
        code: codes.jsonRpc,
        message: message(code),
        data: [{ reason: reasonOf(code) }],
      });
    });

    it("HTTP+JSON 0.3: the table's HTTP status, the JSON-RPC code in the body", async () => {
      const { status, body } = await get(`/v1/tasks/${taskId}/pushNotificationConfigs/${configId}`);
      expect(status).toBe(codes.http);
      expect(body).toMatchObject({ code: codes.jsonRpc, message: message(code) });
    });

    it("HTTP+JSON 1.0: the table's 1.0 HTTP status and gRPC status name", async () => {
      const { status, body } = await get(`/tasks/${taskId}/pushNotificationConfigs/${configId}`, v10);
      const { http, grpc } = statusesOf(code, versionModule("1.0").errors.statuses);
      expect(status).toBe(http);
      expect(body["error"]).toMatchObject({
        code: http,
        status: grpc,
        message: message(code),
        details: [{ reason: reasonOf(code) }],
      });
    });

    it.each(rpcTransports)(
      "%s 0.3 and 1.0: the table's gRPC status (1.0 with an ErrorInfo detail)",
      async (_name, transport) => {
        const v03Err = await connectError(
          createClient(V03Service, transport()).getTaskPushNotificationConfig({
            name: `tasks/${taskId}/pushNotificationConfigs/${configId}`,
          }),
        );
        expect(v03Err.code).toBe(connectCode(codes.grpc));
        expect(v03Err.rawMessage).toBe(message(code));
        const v10Err = await connectError(
          createClient(V10Service, transport()).getTaskPushNotificationConfig(
            { taskId, id: configId },
            { headers: v10 },
          ),
        );
        expect(v10Err.code).toBe(connectCode(statusesOf(code, versionModule("1.0").errors.statuses).grpc));
        expect(v10Err.rawMessage).toBe(message(code));
        expect(errorInfoReason(v10Err)).toBe(reasonOf(code));
      },
    );

    it("OpenWOP REST: the table's HTTP status and envelope code", async () => {
      const { status, body } = await get(`/v1/push/dead-letters?taskId=${configId}`);
      expect(status).toBe(codes.http);
      expect(body).toEqual({ error: codes.rest, message: message(code) });
    });
  });
});
