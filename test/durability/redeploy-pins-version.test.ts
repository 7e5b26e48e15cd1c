import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

/**
 * Issue 40's repro: a task waits at approval gate `approve`; the host restarts with the gate renamed `review`;
 * the approver's reply completes the old task on the version it started with, and a new task uses the new one.
 */
const definition = (gate: string) => `id: pinned-approval
name: Pinned approval
description: Drafts, waits for approval at one gate, then finalizes.
nodes:
  - { kind: task, id: prepare, handler: summarize-request }
  - { kind: approval, id: ${gate}, title: Approve it, artifactFrom: prepare }
  - { kind: task, id: finalize, handler: finalize-request }
`;

describe("a redeploy that renames a gate does not strand a waiting task", () => {
  const mongoUri = inject("mongoUri");
  const dbName = `pinning_${randomUUID().slice(0, 8)}`;
  let server: ServerProcess | undefined;
  let mongo: MongoClient;
  let dir: string;

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
    dir = await mkdtemp(join(tmpdir(), "pinning-"));
  });
  afterAll(async () => {
    await server?.kill();
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
    await rm(dir, { recursive: true, force: true });
  });

  const client = (s: ServerProcess) => new LegacyJsonRpcTransport({ endpoint: `${s.baseUrl}/a2a/jsonrpc` });
  const part = (content: { $case: "text"; value: string } | { $case: "data"; value: Record<string, unknown> }) => ({
    content,
    metadata: undefined,
    filename: "",
    mediaType: "",
  });
  const send = (s: ServerProcess, parts: ReturnType<typeof part>[], task?: { id: string; contextId: string }) =>
    client(s).sendMessage({
      tenant: "",
      message: {
        messageId: randomUUID(),
        contextId: task?.contextId ?? "",
        taskId: task?.id ?? "",
        role: 1,
        parts,
        metadata: task ? undefined : { skillId: "pinned-approval" },
        extensions: [],
        referenceTaskIds: [],
      },
      configuration: undefined,
      metadata: undefined,
    });
  const nodesOf = async (taskId: string) =>
    (
      await mongo
        .db(dbName)
        .collection<{ taskId: string; sequence: number; nodeId?: string }>("task_events")
        .find({ taskId })
        .sort({ sequence: 1 })
        .toArray()
    ).flatMap((e) => (e.nodeId ? [e.nodeId] : []));

  it("completes the old task on its old version and starts new tasks on the new one", async () => {
    await writeFile(join(dir, "pinned-approval.yaml"), definition("approve"));
    const env = { MONGODB_URI: mongoUri, MONGODB_DB: dbName, TIMER_POLL_MS: "100", WORKFLOWS_DIR: dir };
    server = await startServerProcess(env);
    const first = await send(server, [part({ $case: "text", value: "Send the quarterly report" })]);
    if (!("status" in first)) throw new Error(`expected a task, got ${JSON.stringify(first)}`);
    expect(first.status?.state).toBe(6); // TASK_STATE_INPUT_REQUIRED

    // The redeploy: the gate is renamed.
    await writeFile(join(dir, "pinned-approval.yaml"), definition("review"));
    const port = server.port;
    await server.kill();
    server = await startServerProcess(env, port);

    const done = await send(server, [part({ $case: "data", value: { action: "accept" } })], first);
    const finished = "status" in done ? done : undefined;
    expect(finished?.id).toBe(first.id);
    expect(finished?.status?.state).toBe(3); // TASK_STATE_COMPLETED
    expect(new Set(await nodesOf(first.id))).toEqual(new Set(["prepare", "approve", "finalize"]));

    const second = await send(server, [part({ $case: "text", value: "Another report" })]);
    if (!("status" in second)) throw new Error(`expected a task, got ${JSON.stringify(second)}`);
    expect(second.status?.state).toBe(6);
    expect(await nodesOf(second.id)).toContain("review");

    // Both versions are stored; each task recorded its own.
    const versions = await mongo
      .db(dbName)
      .collection<{ _id: string; workflowId: string; version: string }>("workflow_versions")
      .find({ workflowId: "pinned-approval" })
      .toArray();
    expect(versions).toHaveLength(2);
    const heads = mongo.db(dbName).collection<{ _id: string; workflowVersion?: string }>("tasks");
    const [a, b] = await Promise.all([heads.findOne({ _id: first.id }), heads.findOne({ _id: second.id })]);
    expect(a?.workflowVersion).toBeDefined();
    expect(b?.workflowVersion).toBeDefined();
    expect(a?.workflowVersion).not.toBe(b?.workflowVersion);
    expect(versions.map((v) => v.version).sort()).toEqual([a!.workflowVersion!, b!.workflowVersion!].sort());
  });
});
