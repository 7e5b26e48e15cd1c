// The reference: the @a2a-js/sdk 1.3.0 server (DefaultRequestHandler + InMemoryTaskStore, or with
// REFERENCE_STORE=postgres its DatabaseTaskStore on Kysely + pg at DATABASE_URL, tables made by `a2a-db upgrade`;
// the Express JSON-RPC handler with its v0.3 compatibility layer), in its own process. Its executor does what our `echo`
// skill does (workflows/demo/echo.yaml, src/engine/builtin-handlers.ts): the task is submitted, works, gets one
// text artifact "echo" holding the text it was sent, and completes.
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { TaskState, type AgentCard, type Message, type Task } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { DatabaseTaskStore } from "@a2a-js/sdk/server/database";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { serveIpc } from "../lib/ipc.js";

function textOf(message: Message): string {
  return message.parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("");
}

class EchoExecutor implements AgentExecutor {
  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    const now = () => new Date().toISOString();
    const task: Task = {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    bus.publish(
      AgentEvent.statusUpdate({
        ...ids,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
        metadata: undefined,
      }),
    );
    const body = textOf(ctx.userMessage);
    bus.publish(
      AgentEvent.artifactUpdate({
        ...ids,
        artifact: {
          artifactId: "echo",
          name: "echo",
          description: "",
          parts: [
            { content: { $case: "text", value: body }, metadata: undefined, filename: "", mediaType: "text/plain" },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        ...ids,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
        metadata: undefined,
      }),
    );
    bus.finished();
  };

  cancelTask = async (): Promise<void> => {};
}

const app = express();
let baseUrl = "";
const card = (): AgentCard => ({
  name: "Reference echo",
  description: "The @a2a-js/sdk reference server with an echo executor",
  supportedInterfaces: [
    { url: `${baseUrl}/a2a/jsonrpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" },
  ],
  provider: undefined,
  version: "1.0.0",
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [
    {
      id: "echo",
      name: "Echo",
      description: "Answers with the text it was sent",
      tags: [],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  signatures: [],
});
// The pool as a user would build it, at pg's defaults (up to 10 connections).
const db =
  process.env["REFERENCE_STORE"] === "postgres"
    ? new Kysely({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env["DATABASE_URL"] }) }),
      })
    : undefined;
const handler = new DefaultRequestHandler(
  card(),
  db ? new DatabaseTaskStore(db) : new InMemoryTaskStore(),
  new EchoExecutor(),
);
handler.getAgentCard = async () => card();
app.use(
  "/.well-known/agent-card.json",
  agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }),
);
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
const { port } = server.address() as AddressInfo;
baseUrl = `http://127.0.0.1:${port}`;

serveIpc({}, { port, store: db ? "postgres" : "memory" });
process.on("SIGTERM", () =>
  server.close(() => void (db?.destroy() ?? Promise.resolve()).finally(() => process.exit(0))),
);
