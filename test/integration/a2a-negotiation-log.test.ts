// OpenWOP v2 interop.md "The audit event" (openwop/openwop 2549b715): every A2A version negotiation outcome of a call
// this host receives, the refused ones included, is a content-free negotiation.decided on the host's own event log
// (here on MongoDB), readable by the caller's tenant under /host/openwop-a2a-host/events.
import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import "../support/mongo.js";
import { A2AService } from "../../src/gen/a2a/v1/a2a_pb.js";
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { MongoHostEventStore } from "../../src/store/mongo-host-event-store.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** The wire shape: OpenWOP v2's HostEvent (test/fixtures/openwop-v2/host-event-excerpt.schema.json). */
interface WireHostEvent {
  eventId: string;
  type: string;
  timestamp: string;
  delivery: string;
  payload: {
    protocol: string;
    peer: string;
    requested: string;
    negotiated: string | null;
    outcome: string;
    reason: string;
    count: number;
  };
}

const validateHostEvent = (() => {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  const path = new URL("../fixtures/openwop-v2/host-event-excerpt.schema.json", import.meta.url);
  return ajv.compile(JSON.parse(readFileSync(path, "utf8")) as object);
})();

describe("negotiation.decided for the calls this host receives", () => {
  let t: TestApp;
  let mongo: MongoClient;
  let hostEvents: MongoHostEventStore;
  const dbName = `negotiations_${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    mongo = await MongoClient.connect(inject("mongoUri"));
    hostEvents = new MongoHostEventStore(mongo.db(dbName));
    await hostEvents.init();
    t = await startTestApp({}, undefined, undefined, { hostEvents });
  });
  afterAll(async () => {
    await mongo.db(dbName).dropDatabase();
    await mongo.close();
  });

  const rpc = (method: string, headers: Record<string, string> = {}) =>
    fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { id: randomUUID() } }),
    }).then((r) => r.json() as Promise<{ error?: { code: number } }>);
  const events = async (query = "") => {
    const res = await fetch(`${t.baseUrl}/host/openwop-a2a-host/events${query}`);
    return { status: res.status, body: (await res.json()) as { events: WireHostEvent[]; nextAfter?: string } };
  };
  const decision = (e: WireHostEvent) => [
    e.payload.requested,
    e.payload.negotiated,
    e.payload.outcome,
    e.payload.reason,
  ];

  it("records each outcome, once per kind in a window, the count written when it closes", async () => {
    expect((await rpc("tasks/get")).error?.code).toBe(-32001);
    for (let i = 0; i < 3; i++) expect((await rpc("GetTask", { "A2A-Version": "1.0" })).error?.code).toBe(-32001);
    expect((await rpc("GetTask", { "A2A-Version": "9.9" })).error?.code).toBe(-32009);
    const rest = await fetch(`${t.baseUrl}/v1/tasks/${randomUUID()}`, { headers: { "A2A-Version": "1.0; drop" } });
    expect(rest.status).toBe(400);
    const grpc = createClient(A2AService, createGrpcTransport({ baseUrl: t.baseUrl }));
    await grpc.getTask({ name: `tasks/${randomUUID()}` }, { headers: { "a2a-version": "0.3" } }).catch(() => {});
    expect((await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).status).toBe(200);

    let listed: WireHostEvent[] = [];
    for (let i = 0; i < 50 && listed.length < 6; i++) {
      listed = (await events("?type=negotiation.decided")).body.events;
      if (listed.length < 6) await new Promise((r) => setTimeout(r, 20));
    }
    expect(listed.map(decision).sort()).toEqual(
      [
        ["none", "0.3", "accepted", "no-version-named"],
        ["1.0", "1.0", "accepted", "version-served"],
        ["9.9", null, "refused", "version-not-served"],
        ["invalid", null, "refused", "version-not-served"],
        ["0.3", "0.3", "accepted", "version-served"],
        ["none", "0.3", "accepted", "no-version-named"],
      ].sort(),
    );
    for (const e of listed) expect(validateHostEvent(e), JSON.stringify(validateHostEvent.errors)).toBe(true);
    expect(listed.every((e) => e.type === "negotiation.decided" && e.delivery === "durable")).toBe(true);
    // Content-free: the caller's address only as a digest.
    expect(listed.every((e) => /^sha256:[0-9a-f]{64}$/.test(e.payload.peer) && e.payload.protocol === "a2a")).toBe(
      true,
    );
    expect(JSON.stringify(listed)).not.toContain("127.0.0.1");
    expect(JSON.stringify(listed)).not.toContain("drop");

    const metrics = await (await fetch(`${t.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/openwop_a2a_negotiations_total\{[^}]*negotiated="none"[^}]*outcome="refused"[^}]*\} 2/);

    // The window closes when the host stops: the three identical 1.0 calls are one entry counted 3.
    await t.close();
    const stored = await hostEvents.list({ tenant: "default", limit: 100 });
    expect(stored.find((e) => e.payload.requested === "1.0")?.count).toBe(3);
  });

  it("refuses a bad query with a clear message", async () => {
    t = await startTestApp({}, undefined, undefined, { hostEvents });
    try {
      const bad = await events("?type=run.created");
      expect(bad.status).toBe(400);
      expect((bad.body as unknown as { message: string }).message).toContain('unknown event type "run.created"');
      expect((await events("?limit=0")).status).toBe(400);
      expect((await events("?after=../x")).status).toBe(400);
      const paged = await events("?limit=2");
      expect(paged.body.events).toHaveLength(2);
      const next = await events(`?limit=100&after=${paged.body.nextAfter}`);
      expect(next.body.events[0]!.eventId > paged.body.nextAfter!).toBe(true);
    } finally {
      await t.close();
    }
  });
});
