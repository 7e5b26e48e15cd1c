// A real, independent A2A agent for the `a2a.invoke` tests: the @a2a-js/sdk server (DefaultRequestHandler +
// the Express JSON-RPC handler with its v0.3 compatibility layer), on a loopback port. Its AgentExecutor is
// scripted by the text of the first message it receives: "scenario:<name>" picks what the peer answers
// (a2a-peer-scenarios.ts).
//
// Every JSON-RPC request that reaches the peer is recorded (method + params) before the SDK handles it, so a
// test can count exactly how many `message/send` calls the peer got.
//
// With `{ v10: true }` its card also offers the JSON-RPC endpoint for A2A 1.0, first (recorded as `SendMessage`, …).
//
// With `{ grpc: true }` the same handler is also served over A2A v0.3 gRPC — the SDK's own v0.3 gRPC service
// (`@a2a-js/sdk/compat/v0_3/server/grpc`, `a2a.v1.A2AService`) on a @grpc/grpc-js server, plaintext on another
// loopback port — and the card prefers it (`preferredTransport: "GRPC"`, `url: "127.0.0.1:<port>"`), with the
// JSON-RPC interface still listed. gRPC calls are recorded too, under the JSON-RPC method names and params
// (`transport: "grpc"`), and a test can make the next gRPC calls fail with a status (`failNextGrpc`).
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as grpc from "@grpc/grpc-js";
import express from "express";
import type { AgentCard, TaskState } from "@a2a-js/sdk";
import { DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { UserBuilder as GrpcUserBuilder } from "@a2a-js/sdk/server/grpc";
import { LegacyA2AService, legacyGrpcService } from "@a2a-js/sdk/compat/v0_3/server/grpc";
import { ScriptedExecutor } from "./a2a-peer-scenarios.js";

export interface RecordedRequest {
  /** The JSON-RPC method; gRPC calls are recorded under the same names (SendMessage → message/send, …). */
  method: string;
  /** The JSON-RPC params; for gRPC, the request in that shape (message.parts with kind, or the task id). */
  params: Record<string, unknown>;
  at: number;
  transport: "jsonrpc" | "grpc";
  /** The request's `A2A-Version` header (JSON-RPC), as sent. */
  a2aVersion?: string;
}

export type GrpcMethod = "message/send" | "tasks/get" | "tasks/cancel";

export interface TestPeer {
  baseUrl: string;
  cardUrl: string;
  port: number;
  /** The gRPC server's port, with `{ grpc: true }`. */
  grpcPort?: number;
  requests: RecordedRequest[];
  /** The next gRPC calls of `method` answer these statuses (one each, in order) without reaching the SDK. */
  failNextGrpc(method: GrpcMethod, ...codes: grpc.status[]): void;
  /** `message/send` calls received, in order. */
  sends(): Array<{
    messageId: string;
    taskId?: string;
    contextId?: string;
    text: string;
    data: unknown[];
    metadata?: Record<string, unknown>;
  }>;
  /** Lets a "working" or "unknown" task complete. */
  release(taskId: string): void;
  /** Tasks created so far (by peer task id) with their latest state. */
  taskStates(): Map<string, TaskState>;
  close(): Promise<void>;
}

/** A v0.3 gRPC request (the SDK's ts-proto shapes) in the JSON-RPC params shape. */
function paramsOfGrpc(method: GrpcMethod, request: Record<string, any>): Record<string, unknown> {
  if (method !== "message/send") return { id: String(request["name"] ?? "").replace(/^tasks\//, "") };
  const message = (request["request"] ?? {}) as Record<string, any>;
  const parts = ((message["content"] ?? []) as Array<{ part?: { $case: string; value: any } }>).map((p) =>
    p.part?.$case === "text"
      ? { kind: "text", text: p.part.value }
      : p.part?.$case === "data"
        ? { kind: "data", data: p.part.value.data }
        : { kind: p.part?.$case ?? "none" },
  );
  return {
    message: {
      messageId: message["messageId"],
      ...(message["taskId"] ? { taskId: message["taskId"] } : {}),
      ...(message["contextId"] ? { contextId: message["contextId"] } : {}),
      parts,
      ...(message["metadata"] ? { metadata: message["metadata"] } : {}),
    },
    ...(request["configuration"] ? { configuration: { blocking: request["configuration"].blocking } } : {}),
  };
}

/** Starts the peer on a free loopback port (and its gRPC server on another, with `{ grpc: true }`). */
export async function startTestPeer(options: { grpc?: boolean; v10?: boolean } = {}): Promise<TestPeer> {
  const executor = new ScriptedExecutor();
  const requests: RecordedRequest[] = [];
  const grpcFailures = new Map<GrpcMethod, grpc.status[]>();
  const app = express();
  let baseUrl = "";
  let grpcPort: number | undefined;
  const jsonRpcInterface = () => ({
    url: `${baseUrl}/a2a/jsonrpc`,
    protocolBinding: "JSONRPC",
    tenant: "",
    protocolVersion: "0.3",
  });
  const card = (): AgentCard => ({
    name: "Test peer",
    description: "A scripted A2A agent for the a2a.invoke tests",
    // The first 0.3 interface becomes the 0.3 card's url/preferredTransport (the SDK's card compat layer).
    // With `{ v10: true }` the JSON-RPC endpoint is offered for A2A 1.0 too, first (the SDK serves both on it).
    supportedInterfaces: [
      ...(options.v10 ? [{ ...jsonRpcInterface(), protocolVersion: "1.0" }] : []),
      ...(grpcPort === undefined
        ? [jsonRpcInterface()]
        : [
            { url: `127.0.0.1:${grpcPort}`, protocolBinding: "GRPC", tenant: "", protocolVersion: "0.3" },
            jsonRpcInterface(),
          ]),
    ],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [
      {
        id: "scripted",
        name: "Scripted",
        description: "Answers as the scenario says",
        tags: [],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  });
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  // The card's URLs need the port, known only after listen: the handler reads the card on every call.
  handler.getAgentCard = async () => card();
  app.use(
    "/.well-known/agent-card.json",
    agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }),
  );
  app.use("/a2a/jsonrpc", express.json(), (req, _res, next) => {
    const body = req.body as { method?: unknown; params?: unknown } | undefined;
    const a2aVersion = req.headers["a2a-version"];
    if (body && typeof body.method === "string") {
      requests.push({
        method: body.method,
        params: (body.params ?? {}) as Record<string, unknown>,
        at: Date.now(),
        transport: "jsonrpc",
        ...(typeof a2aVersion === "string" ? { a2aVersion } : {}),
      });
    }
    next();
  });
  app.use(
    "/a2a/jsonrpc",
    jsonRpcHandler({
      requestHandler: handler,
      userBuilder: UserBuilder.noAuthentication,
      legacyCompat: { enabled: true },
    }),
  );
  const server: Server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://127.0.0.1:${port}`;

  let grpcServer: grpc.Server | undefined;
  if (options.grpc) {
    const service = legacyGrpcService({ requestHandler: handler, userBuilder: GrpcUserBuilder.noAuthentication });
    // Records each call, or answers an injected failure, before the SDK's v0.3 gRPC service sees it.
    const recorded =
      <Req, Res>(method: GrpcMethod, impl: grpc.handleUnaryCall<Req, Res>): grpc.handleUnaryCall<Req, Res> =>
      (call, callback) => {
        requests.push({
          method,
          params: paramsOfGrpc(method, call.request as Record<string, any>),
          at: Date.now(),
          transport: "grpc",
        });
        const failure = grpcFailures.get(method)?.shift();
        if (failure !== undefined) {
          callback({ code: failure, details: `injected ${grpc.status[failure]}` });
          return;
        }
        impl(call, callback);
      };
    grpcServer = new grpc.Server();
    grpcServer.addService(LegacyA2AService, {
      ...service,
      sendMessage: recorded("message/send", service.sendMessage),
      getTask: recorded("tasks/get", service.getTask),
      cancelTask: recorded("tasks/cancel", service.cancelTask),
    });
    const listening = grpcServer;
    grpcPort = await new Promise<number>((resolve, reject) =>
      listening.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
  }
  return {
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    port,
    ...(grpcPort !== undefined ? { grpcPort } : {}),
    requests,
    failNextGrpc(method, ...codes) {
      grpcFailures.set(method, [...(grpcFailures.get(method) ?? []), ...codes]);
    },
    sends() {
      return requests
        .filter((r) => r.method === "message/send" || r.method === "SendMessage")
        .map((r) => {
          const message = r.params["message"] as {
            messageId: string;
            taskId?: string;
            contextId?: string;
            parts: Array<{ kind?: string; text?: string; data?: unknown }>;
            metadata?: Record<string, unknown>;
          };
          // 1.0 ProtoJSON parts have no kind: the member present says it.
          for (const p of message.parts)
            p.kind ??= p.text !== undefined ? "text" : p.data !== undefined ? "data" : "other";
          return {
            messageId: message.messageId,
            ...(message.taskId ? { taskId: message.taskId } : {}),
            ...(message.contextId ? { contextId: message.contextId } : {}),
            text: message.parts.flatMap((p) => (p.kind === "text" && p.text !== undefined ? [p.text] : [])).join("\n"),
            data: message.parts.flatMap((p) => (p.kind === "data" ? [p.data] : [])),
            ...(message.metadata ? { metadata: message.metadata } : {}),
          };
        });
    },
    release: (taskId) => executor.release(taskId),
    taskStates: () => executor.states,
    async close() {
      grpcServer?.forceShutdown();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
