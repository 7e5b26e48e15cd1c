// openwop_ready and openwop_store_up (what OpenwopNotReady and OpenwopStoreUnavailable read) follow the store as
// /readyz does: a host on MongoDB (the wire-protocol test server) whose store goes away and comes back.
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterEach, describe, expect, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { startMongoWireServer, type MongoWireServer } from "../support/mongo-wire-server/server.js";
import { parsePrometheusText } from "../support/prometheus-text.js";
import { waitFor } from "../support/push-receiver.js";
import { startTestApp } from "../support/start-server.js";

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
});

/** The two readiness gauges of one scrape. */
async function gauges(base: string): Promise<{ ready?: number; storeUp?: number }> {
  const samples = parsePrometheusText(await (await fetch(`${base}/metrics`)).text());
  const value = (name: string) => samples.find((s) => s.name === name)?.value;
  return { ready: value("openwop_ready"), storeUp: value("openwop_store_up") };
}

describe("readiness gauges", () => {
  it("read 1 while the store answers, 0 while it is gone, 1 once it is back", async () => {
    let wire: MongoWireServer = await startMongoWireServer({ port: 0, log: () => {} });
    const port = wire.port;
    const client = new MongoClient(wire.uri, { serverSelectionTimeoutMS: 300, heartbeatFrequencyMS: 500 });
    await client.connect();
    cleanups.push(() => client.close());
    const store = new MongoTaskStore(client, client.db(`readiness_${randomUUID().slice(0, 8)}`));
    await store.init();
    const host = await startTestApp({ READINESS_TIMEOUT_MS: "500" }, store);
    cleanups.push(() => host.close());

    expect(await gauges(host.baseUrl)).toEqual({ ready: 1, storeUp: 1 });

    await wire.close();
    await waitFor(async () => (await gauges(host.baseUrl)).storeUp === 0, 10_000, "openwop_store_up 0");
    expect((await gauges(host.baseUrl)).ready).toBe(0);

    wire = await startMongoWireServer({ port, log: () => {} });
    cleanups.push(() => wire.close());
    await waitFor(async () => (await gauges(host.baseUrl)).storeUp === 1, 15_000, "openwop_store_up 1 again");
  }, 60_000);
});
