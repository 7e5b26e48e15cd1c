// Several host processes on one database, each reachable over three A2A bindings with the clients the
// integration tests use: JSON-RPC 0.3 (fetch), HTTP+JSON (fetch, ProtoJSON) and gRPC (@grpc/grpc-js +
// proto-loader on our proto). A slot can be killed (SIGKILL) and started again as a new incarnation (a new
// INSTANCE_ID), so a test can tell which process did what.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { startServerProcess, type ServerProcess } from "./server-process.js";

type Obj = Record<string, any>;

export type Binding = "jsonrpc" | "rest" | "grpc";
export const BINDINGS: readonly Binding[] = ["jsonrpc", "rest", "grpc"];

export interface Incarnation {
  slot: number;
  instanceId: string;
  server: ServerProcess;
  grpc: grpc.Client & Record<string, any>;
  alive: boolean;
}

export interface PushTarget {
  url: string;
  token: string;
}

const protoDir = fileURLToPath(new URL("../../proto", import.meta.url));
let a2aService: grpc.ServiceClientConstructor | undefined;

function grpcService(): grpc.ServiceClientConstructor {
  if (!a2aService) {
    const definition = protoLoader.loadSync("a2a/v1/a2a.proto", {
      includeDirs: [protoDir],
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    a2aService = (grpc.loadPackageDefinition(definition) as any).a2a.v1.A2AService as grpc.ServiceClientConstructor;
  }
  return a2aService;
}

/** google.protobuf.Struct as protobufjs wants it (string values are all these tests send). */
function struct(obj: Record<string, string>): Obj {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, { stringValue: v }])) };
}

export class HostCluster {
  readonly slots: Incarnation[] = [];
  /** Every incarnation started, by instance id (killed ones too). */
  readonly incarnations = new Map<string, Incarnation>();
  /** Instance ids of the incarnations killed so far. */
  readonly killed = new Set<string>();
  private generation = 0;

  constructor(
    private readonly env: Record<string, string>,
    private readonly entry: string,
  ) {}

  /** Starts (or restarts) the slot's process as a new incarnation. */
  async start(slot: number): Promise<Incarnation> {
    const instanceId = `host-${slot}-${++this.generation}`;
    const server = await startServerProcess({ ...this.env, INSTANCE_ID: instanceId }, undefined, this.entry);
    const client = new (grpcService())(
      `127.0.0.1:${server.port}`,
      grpc.credentials.createInsecure(),
    ) as Incarnation["grpc"];
    const incarnation: Incarnation = { slot, instanceId, server, grpc: client, alive: true };
    this.slots[slot] = incarnation;
    this.incarnations.set(instanceId, incarnation);
    return incarnation;
  }

  async kill(slot: number): Promise<Incarnation> {
    const victim = this.slots[slot]!;
    victim.alive = false;
    this.killed.add(victim.instanceId);
    await victim.server.kill();
    victim.grpc.close();
    this.keepLog(victim);
    return victim;
  }

  /** HOST_LOG_DIR: each incarnation's output is written there when it ends (to read after a failed run). */
  private keepLog(incarnation: Incarnation): void {
    const dir = process.env["HOST_LOG_DIR"];
    if (dir) writeFileSync(join(dir, `${incarnation.instanceId}.log`), incarnation.server.output());
  }

  /**
   * The tasks whose lease this incarnation reported lost: a commit of it was fenced (another instance took
   * over), or its heartbeat failed for longer than the TTL.
   */
  leasesLost(instanceId: string): Set<string> {
    const lost = new Set<string>();
    for (const line of this.incarnations.get(instanceId)?.server.output().split("\n") ?? []) {
      if (!line.includes("task lease lost") && !line.includes("task leases expired")) continue;
      const entry = JSON.parse(line) as { taskId?: string; taskIds?: string[] };
      for (const id of [entry.taskId ?? [], entry.taskIds ?? []].flat()) lost.add(id);
    }
    return lost;
  }

  live(): Incarnation[] {
    return this.slots.filter((s) => s.alive);
  }

  /** The slot's incarnation if it is up, else the next live one. */
  pick(slot: number, avoid?: string): Incarnation | undefined {
    for (let i = 0; i < this.slots.length; i++) {
      const candidate = this.slots[(slot + i) % this.slots.length];
      if (candidate?.alive && candidate.instanceId !== avoid) return candidate;
    }
    return undefined;
  }

  async stopAll(): Promise<void> {
    for (const s of this.slots) {
      if (!s.alive) continue;
      s.alive = false;
      s.grpc.close();
      await s.server.kill();
      this.keepLog(s);
    }
  }
}

async function jsonRpc(on: Incarnation, method: string, params: unknown): Promise<Obj> {
  const res = await fetch(`${on.server.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
  });
  const body = (await res.json()) as Obj;
  if (body["error"]) throw new Error(`${method}: ${JSON.stringify(body["error"])}`);
  return body["result"] as Obj;
}

async function restPost(on: Incarnation, path: string, body: unknown): Promise<Obj> {
  const res = await fetch(`${on.server.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as Obj;
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}

function grpcSend(on: Incarnation, request: Obj, configuration: Obj): Promise<Obj> {
  return new Promise((resolve, reject) =>
    (on.grpc["SendMessage"] as (req: Obj, cb: (err: grpc.ServiceError | null, res: Obj) => void) => void).call(
      on.grpc,
      { request, configuration },
      (err, res) => (err ? reject(err) : resolve(res)),
    ),
  );
}

/** Creates a task of `skillId` without waiting for it (blocking false on every binding); resolves with its id. */
export async function sendTask(
  on: Incarnation,
  binding: Binding,
  skillId: string,
  text: string,
  push?: PushTarget,
): Promise<string> {
  const messageId = randomUUID();
  switch (binding) {
    case "jsonrpc": {
      const configuration = { blocking: false, ...(push ? { pushNotificationConfig: push } : {}) };
      const task = await jsonRpc(on, "message/send", {
        message: { kind: "message", messageId, role: "user", parts: [{ kind: "text", text }], metadata: { skillId } },
        configuration,
      });
      return task["id"] as string;
    }
    case "rest": {
      const configuration = { blocking: false, ...(push ? { pushNotification: push } : {}) };
      const answer = await restPost(on, "/v1/message:send", {
        message: { messageId, role: "ROLE_USER", content: [{ text }], metadata: { skillId } },
        configuration,
      });
      return answer["task"]["id"] as string;
    }
    case "grpc": {
      const configuration = { blocking: false, ...(push ? { pushNotification: push } : {}) };
      const answer = await grpcSend(
        on,
        { messageId, role: "ROLE_USER", content: [{ text }], metadata: struct({ skillId }) },
        configuration,
      );
      return answer["task"]["id"] as string;
    }
  }
}

/** Answers a task's approval gate with `{action}` (a data part), without waiting for what follows. */
export async function answerTask(on: Incarnation, binding: Binding, taskId: string, action: string): Promise<void> {
  const messageId = randomUUID();
  switch (binding) {
    case "jsonrpc":
      await jsonRpc(on, "message/send", {
        message: { kind: "message", messageId, role: "user", taskId, parts: [{ kind: "data", data: { action } }] },
        configuration: { blocking: false },
      });
      return;
    case "rest":
      await restPost(on, "/v1/message:send", {
        message: { messageId, role: "ROLE_USER", taskId, content: [{ data: { data: { action } } }] },
        configuration: { blocking: false },
      });
      return;
    case "grpc":
      await grpcSend(
        on,
        { messageId, role: "ROLE_USER", taskId, content: [{ data: { data: struct({ action }) } }] },
        { blocking: false },
      );
      return;
  }
}
