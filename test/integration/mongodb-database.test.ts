import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

/** MONGODB_URI's database path is where tasks go; MONGODB_DB overrides it only when set (the real process). */
describe("the database named by MONGODB_URI", () => {
  const mongoUri = inject("mongoUri");
  const inPath = `uri_path_${randomUUID().slice(0, 8)}`;
  const override = `uri_override_${randomUUID().slice(0, 8)}`;
  let mongo: MongoClient;
  const servers: ServerProcess[] = [];

  /** The test backend's URI with `db` as its path (keeping any query). */
  const withPath = (db: string) => {
    const url = new URL(mongoUri);
    url.pathname = `/${db}`;
    return url.toString();
  };

  beforeAll(async () => {
    mongo = await MongoClient.connect(mongoUri);
  });
  afterAll(async () => {
    for (const s of servers) await s.kill();
    for (const db of [inPath, override]) await mongo.db(db).dropDatabase();
    await mongo.close();
  });

  const createTask = async (server: ServerProcess): Promise<string> => {
    const res = await fetch(`${server.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hi" }] },
        },
      }),
    });
    return ((await res.json()) as { result: { id: string } }).result.id;
  };

  it("writes into the URI's database and names it on the start-up line", async () => {
    const server = await startServerProcess({ MONGODB_URI: withPath(inPath), MONGODB_DB: "" });
    servers.push(server);
    expect(server.output()).toContain(`database ${inPath}`);
    const taskId = await createTask(server);
    expect(
      await mongo
        .db(inPath)
        .collection("tasks")
        .countDocuments({ _id: taskId } as never),
    ).toBe(1);
  });

  it("MONGODB_DB, when set, wins over the URI's path", async () => {
    const server = await startServerProcess({ MONGODB_URI: withPath(inPath), MONGODB_DB: override });
    servers.push(server);
    expect(server.output()).toContain(`database ${override}`);
    const taskId = await createTask(server);
    expect(
      await mongo
        .db(override)
        .collection("tasks")
        .countDocuments({ _id: taskId } as never),
    ).toBe(1);
    expect(
      await mongo
        .db(inPath)
        .collection("tasks")
        .countDocuments({ _id: taskId } as never),
    ).toBe(0);
  });
});
