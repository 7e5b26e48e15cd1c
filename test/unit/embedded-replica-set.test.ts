// The embedded default's single-node replica set. No mongod binary can be fetched in CI's sandbox, so the start
// itself is not exercised here; what is tested is what it is built from: the library options, and the port
// record that keeps the member's stored host valid across restarts.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoMemoryReplSet } from "mongodb-memory-server-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assertPortFree,
  EMBEDDED_REPLICA_SET,
  embeddedReplicaSetOptions,
  embeddedReplicaSetPaths,
  recordedPort,
  recordPort,
} from "../../src/store/embedded-replica-set.js";

describe("embedded single-node replica set", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "embedded-rs-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("one wiredTiger member named rs0, its files under DATA_DIR/mongo, on the recorded port once there is one", () => {
    const { dbPath, portFile } = embeddedReplicaSetPaths(dir);
    expect(dbPath).toBe(join(dir, "mongo"));
    expect(portFile).toBe(join(dir, "mongo-replica-set.json"));
    expect(embeddedReplicaSetOptions(dbPath, undefined)).toEqual({
      replSet: { name: "rs0", count: 1, storageEngine: "wiredTiger" },
      instanceOpts: [{ dbPath, storageEngine: "wiredTiger" }],
    });
    expect(embeddedReplicaSetOptions(dbPath, 27_123).instanceOpts?.[0]?.port).toBe(27_123);
  });

  it("the library takes the options as given (without starting): name, count, engine, and the member's path and port", () => {
    const dbPath = join(dir, "mongo");
    const replSet = new MongoMemoryReplSet(embeddedReplicaSetOptions(dbPath, 27_123));
    expect(replSet.replSetOpts).toMatchObject({ name: EMBEDDED_REPLICA_SET, count: 1, storageEngine: "wiredTiger" });
    expect(replSet.instanceOpts).toEqual([{ dbPath, storageEngine: "wiredTiger", port: 27_123 }]);
  });

  it("the port record: absent on a first start, read back after a start, refused when it holds no port", async () => {
    const portFile = join(dir, "port.json");
    expect(await recordedPort(portFile)).toBeUndefined();
    await recordPort(portFile, 40_001);
    expect(JSON.parse(await readFile(portFile, "utf8"))).toEqual({ replicaSet: "rs0", port: 40_001 });
    expect(await recordedPort(portFile)).toBe(40_001);
    await writeFile(portFile, JSON.stringify({ port: "27017" }));
    await expect(recordedPort(portFile)).rejects.toThrow(/holds no valid port/);
  });

  it("a recorded port another process listens on is reported before anything starts; a free one passes", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(assertPortFree(port, "ports.json")).rejects.toThrow(
        new RegExp(`port 127\\.0\\.0\\.1:${port} \\(recorded in ports\\.json.*\\) is taken \\(EADDRINUSE\\)`),
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    await expect(assertPortFree(port, "ports.json")).resolves.toBeUndefined();
  });
});
