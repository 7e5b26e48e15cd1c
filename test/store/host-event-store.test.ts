import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import type { NegotiationDecided } from "../../src/domain/negotiation.js";
import { MemoryHostEventStore, type HostEventStore } from "../../src/store/host-event-store.js";
import { MongoHostEventStore } from "../../src/store/mongo-host-event-store.js";

const decided = (requested: string): NegotiationDecided => ({
  protocol: "a2a",
  peer: "sha256:00",
  requested,
  negotiated: requested,
  outcome: "accepted",
  reason: "version-served",
});
const entry = (requested: string, tenant?: string) => ({
  type: "negotiation.decided" as const,
  at: "2026-11-29T00:00:00.000Z",
  ...(tenant ? { tenant } : {}),
  count: 1,
  payload: decided(requested),
});

describe.each(["memory", "mongodb"])("the %s host event store", (kind) => {
  let mongo: MongoClient | undefined;
  let store: HostEventStore;
  const dbName = `host_events_${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    if (kind === "memory") store = new MemoryHostEventStore();
    else {
      mongo = await MongoClient.connect(inject("mongoUri"));
      const mongoStore = new MongoHostEventStore(mongo.db(dbName));
      await mongoStore.init();
      store = mongoStore;
    }
  });
  afterAll(async () => {
    await mongo?.db(dbName).dropDatabase();
    await mongo?.close();
  });

  it("lists a tenant's entries and those of no tenant, in the order written, page by page; counts are updated", async () => {
    const acme1 = await store.append(entry("1.0", "acme"));
    await store.append(entry("0.3", "globex"));
    const anyone = await store.append(entry("9.9"));
    const acme2 = await store.append(entry("0.3", "acme"));
    await store.setCount(acme1, 7);

    const all = await store.list({ tenant: "acme", limit: 10 });
    expect(all.map((e) => e.id)).toEqual([acme1, anyone, acme2]);
    expect(all[0]).toEqual({ id: acme1, ...entry("1.0", "acme"), count: 7 });
    expect(all[1]).not.toHaveProperty("tenant");
    expect((await store.list({ tenant: "acme", limit: 2 })).map((e) => e.id)).toEqual([acme1, anyone]);
    expect((await store.list({ tenant: "acme", after: anyone, limit: 2 })).map((e) => e.id)).toEqual([acme2]);
    expect((await store.list({ tenant: "globex", limit: 10 })).map((e) => e.payload.requested)).toEqual(["0.3", "9.9"]);
  });

  if (kind === "mongodb")
    it("expires entries through a TTL index", async () => {
      const indexes = await mongo!.db(dbName).collection("host_events").indexes();
      expect(indexes.find((i) => i.name === "host_events_ttl")).toMatchObject({ expireAfterSeconds: 0 });
    });
});
