// One blocking `message/send` per call, over each binding the bench drives. A call resolves with the task's id
// and its state (lowercase-hyphen, as in JSON-RPC 0.3), and throws on a transport or protocol error.
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Pool } from "undici";
import { A2AService, Role, TaskState } from "../../src/gen/a2a/v1/a2a_pb.js";

export type Protocol = "jsonrpc" | "rest" | "grpc";

/**
 * A new task of `skill` with this text (blocking unless `blocking: false`), a reply (a data part) to a waiting
 * task (JSON-RPC: with `historyLength`, the answer carries only that many of the newest messages), or
 * (JSON-RPC only) `tasks/cancel`.
 */
export type SendOp =
  | { skill: string; text: string; blocking?: boolean }
  | { taskId: string; data: Record<string, unknown>; historyLength?: number }
  | { cancel: string };

const blocking = (op: SendOp) => !("blocking" in op && op.blocking === false);

export interface SendResult {
  taskId: string;
  state: string;
}

export interface Sender {
  send(op: SendOp): Promise<SendResult>;
  close(): Promise<void>;
}

interface Obj {
  [key: string]: unknown;
}

function asObject(value: unknown, what: string): Obj {
  if (typeof value !== "object" || value === null)
    throw new Error(`unexpected ${what}: ${JSON.stringify(value)?.slice(0, 300)}`);
  return value as Obj;
}

/** `TASK_STATE_INPUT_REQUIRED` → `input-required`. */
function normalState(protoName: string): string {
  return protoName
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replace(/_/g, "-");
}

function jsonRpcSender(baseUrl: string, connections: number): Sender {
  const pool = new Pool(baseUrl, { connections, pipelining: 1 });
  return {
    async send(op) {
      let request: { method: string; params: unknown };
      if ("cancel" in op) request = { method: "tasks/cancel", params: { id: op.cancel } };
      else {
        const message =
          "skill" in op
            ? {
                kind: "message",
                messageId: randomUUID(),
                role: "user",
                parts: [{ kind: "text", text: op.text }],
                metadata: { skillId: op.skill },
              }
            : {
                kind: "message",
                messageId: randomUUID(),
                role: "user",
                taskId: op.taskId,
                parts: [{ kind: "data", data: op.data }],
              };
        const historyLength =
          "historyLength" in op && op.historyLength !== undefined ? { historyLength: op.historyLength } : {};
        request = {
          method: "message/send",
          params: { message, configuration: { blocking: blocking(op), ...historyLength } },
        };
      }
      const res = await pool.request({
        path: "/a2a/jsonrpc",
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, ...request }),
      });
      const body = asObject(await res.body.json(), "JSON-RPC answer");
      const task = asObject(body["result"] ?? body["error"], "JSON-RPC answer");
      const status = asObject(task["status"], `JSON-RPC result ${JSON.stringify(body).slice(0, 300)}`);
      return { taskId: String(task["id"]), state: String(status["state"]) };
    },
    close: () => pool.close(),
  };
}

function restSender(baseUrl: string, connections: number): Sender {
  const pool = new Pool(baseUrl, { connections, pipelining: 1 });
  return {
    async send(op) {
      if ("cancel" in op) throw new Error("the bench cancels over JSON-RPC only");
      const message =
        "skill" in op
          ? {
              messageId: randomUUID(),
              role: "ROLE_USER",
              content: [{ text: op.text }],
              metadata: { skillId: op.skill },
            }
          : { messageId: randomUUID(), role: "ROLE_USER", taskId: op.taskId, content: [{ data: { data: op.data } }] };
      const res = await pool.request({
        path: "/v1/message:send",
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message, configuration: { blocking: blocking(op) } }),
      });
      const body = asObject(await res.body.json(), "HTTP+JSON answer");
      const task = asObject(body["task"], `HTTP+JSON answer ${res.statusCode} ${JSON.stringify(body).slice(0, 300)}`);
      return { taskId: String(task["id"]), state: normalState(String(asObject(task["status"], "status")["state"])) };
    },
    close: () => pool.close(),
  };
}

function grpcSender(baseUrl: string): Sender {
  // One HTTP/2 connection, as a gRPC client channel has; concurrent calls are streams on it.
  const client = createClient(A2AService, createGrpcTransport({ baseUrl }));
  return {
    async send(op) {
      if ("cancel" in op) throw new Error("the bench cancels over JSON-RPC only");
      const request =
        "skill" in op
          ? {
              messageId: randomUUID(),
              role: Role.USER,
              content: [{ part: { case: "text" as const, value: op.text } }],
              metadata: { skillId: op.skill },
            }
          : {
              messageId: randomUUID(),
              role: Role.USER,
              taskId: op.taskId,
              content: [{ part: { case: "data" as const, value: { data: op.data as JsonObject } } }],
            };
      const res = await client.sendMessage({ request, configuration: { blocking: blocking(op) } });
      if (res.payload.case !== "task") throw new Error(`gRPC answered ${res.payload.case ?? "nothing"}, not a task`);
      const task = res.payload.value;
      return { taskId: task.id, state: normalState(TaskState[task.status?.state ?? TaskState.UNSPECIFIED]) };
    },
    close: async () => {},
  };
}

export function createSender(baseUrl: string, protocol: Protocol, connections: number): Sender {
  if (protocol === "jsonrpc") return jsonRpcSender(baseUrl, connections);
  if (protocol === "rest") return restSender(baseUrl, connections);
  return grpcSender(baseUrl);
}
