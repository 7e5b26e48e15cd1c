import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoTaskStore } from "../../src/store/mongo-task-store.js";
import { openwopClient, type Answer } from "../support/openwop-client.js";
import { readSse } from "../support/sse.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

// OpenWOP v2 beside v1 on one host, on the MongoDB store (spec/v2/core/versioning.md §1 and §5, identity.md §5,
// runs.md, errors.md, events.md; commits in docs/openwop.md).
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond"];
const ACME = "acme-key-0123456789abcdef0123456789abcdef";
const GLOBEX = "globex-key-0123456789abcdef0123456789abcdef";
const V2 = { "openwop-version": "2" };

const validateV2Root = (() => {
  // Strict, but for `required` inside if/then/not (the upstream record's idiom names properties defined beside it).
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  addFormats(ajv);
  const path = new URL("../fixtures/openwop-v2/capabilities-excerpt.schema.json", import.meta.url);
  return ajv.compile(JSON.parse(readFileSync(path, "utf8")) as object);
})();

function expectV2Error(answer: Answer, status: number, code: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(Object.keys(answer.body).every((k) => ["error", "message", "details"].includes(k))).toBe(true);
  expect(answer.body.error).toBe(code);
  expect(typeof answer.body.message).toBe("string");
}

/** One request with raw header lines (fetch joins a repeated header; this sends it twice). */
function rawGet(baseUrl: string, path: string, headers: Array<[string, string]>): Promise<Answer> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: "GET" }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          headers: new Headers(Object.entries(res.headers).map(([k, v]) => [k, String(v)])),
          body: text ? JSON.parse(text) : undefined,
        }),
      );
    });
    req.on("error", reject);
    for (const [name, value] of headers) req.appendHeader(name, value);
    req.end();
  });
}

async function startHost(db: Db, client: MongoClient, env: Record<string, string> = {}): Promise<TestApp> {
  const store = new MongoTaskStore(client, db);
  await store.init();
  return startTestApp(
    {
      API_KEYS: JSON.stringify([
        { id: "acme", tenant: "acme", scopes: ALL, key: ACME },
        { id: "globex", tenant: "globex", scopes: ALL, key: GLOBEX },
      ]),
      ...env,
    },
    store,
  );
}

describe("OpenWOP 1 and 2 side by side (the overlap)", () => {
  let client: MongoClient;
  let db: Db;
  let t: TestApp;
  let call: ReturnType<typeof openwopClient>["call"];
  const acme = { authorization: `Bearer ${ACME}` };
  const globex = { authorization: `Bearer ${GLOBEX}` };
  const runCount = () => db.collection("tasks").countDocuments();

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"));
    db = client.db(`v2_${randomUUID().slice(0, 8)}`);
    t = await startHost(db, client);
    call = openwopClient(t.baseUrl).call;
  });
  afterAll(async () => {
    await t?.close();
    await client?.close();
  });

  it("a run created through /v1/runs without a header is read through /runs with OpenWOP-Version: 2, tenant-bound", async () => {
    const created = await call("POST", "/v1/runs", { workflowId: "conformance-noop" }, acme);
    expect(created.status).toBe(201);
    expect(created.headers.get("openwop-version")).toBe("1.0");
    const bare = created.body.runId as string;
    expect(bare).not.toContain("/");

    for (const spelling of [`acme~2F${bare}`, `acme%2F${bare}`, bare]) {
      const read = await call("GET", `/runs/${spelling}`, undefined, { ...acme, ...V2 });
      expect(read.status, spelling).toBe(200);
      expect(read.headers.get("openwop-version")).toBe("2.0");
      expect(read.body.runId).toBe(`acme/${bare}`);
      expect(read.body.owner).toMatchObject({ tenant: "acme", subject: { tenant: "acme", lane: "api-key" } });
      expect(read.body.eventLogSchemaVersion).toBe(3);
      expect(read.body).not.toHaveProperty("interrupts");
    }
    // The same run, still read through /v1 as OpenWOP 1.
    const v1 = await call("GET", `/v1/runs/${bare}`, undefined, acme);
    expect(v1.status).toBe(200);
    expect(v1.headers.get("openwop-version")).toBe("1.0");
    expect(v1.body.runId).toBe(bare);
  });

  it("a run created through /runs is bound and linked in the projected form; its events are v2 envelopes", async () => {
    const created = await call("POST", "/runs", { workflowId: "conformance-noop" }, { ...acme, ...V2 });
    expect(created.status).toBe(201);
    const runId = created.body.runId as string;
    expect(runId).toMatch(/^acme\/[A-Za-z0-9._~-]{16,128}$/);
    const projected = runId.replace("/", "~2F");
    expect(created.body.statusUrl).toBe(`/runs/${projected}`);
    expect(created.headers.get("location")).toBe(`/runs/${projected}`);

    let poll: Answer;
    do poll = await call("GET", `/runs/${projected}/events/poll?timeout=1`, undefined, { ...acme, ...V2 });
    while (!poll.body.isTerminal);
    expect(poll.status).toBe(200);
    expect(Object.keys(poll.body).sort()).toEqual(["events", "isTerminal", "lastSequence", "runId", "status"]);
    expect(poll.body).toMatchObject({ runId, status: "completed" });
    const types = poll.body.events.map((e: { type: string }) => e.type);
    expect(types).toContain("run.started");
    expect(types.at(-1)).toBe("run.completed");
    expect(types).not.toContain("run.created"); // no v2 codemap row: left out, never renamed
    const snapshot = await call("GET", `/runs/${projected}`, undefined, { ...acme, ...V2 });
    const started = poll.body.events.find((e: { type: string }) => e.type === "run.started");
    expect(started.payload.owner).toEqual(snapshot.body.owner);
    expect(poll.body.events.at(-1).payload.outputs).toEqual({});
    for (const event of poll.body.events) {
      expect(event.runId).toBe(runId);
      expect(event.schemaVersion).toBe(1);
      expect(event.eventId).toMatch(/^[A-Za-z0-9._~-]{16,128}$/);
    }

    const sse = await fetch(`${t.baseUrl}/runs/${projected}/events`, { headers: { ...acme, ...V2 } });
    expect(sse.headers.get("openwop-version")).toBe("2.0");
    const frames = await readSse(sse);
    expect(frames.map((f) => f.event)).toEqual(types);
    expect((frames[0]!.data as { runId: string }).runId).toBe(runId);

    // getOpenApiSpec has its unversioned twin too, and it documents the v2 operations.
    const spec = await call("GET", "/openapi.json", undefined, { ...acme, ...V2 });
    expect(spec.status).toBe(200);
    expect(spec.headers.get("openwop-version")).toBe("2.0");
    expect(Object.keys(spec.body.paths)).toEqual(expect.arrayContaining(["/runs", "/runs/{runId}/events/poll"]));
    // A v2 id on a /v1 path names no v1 run.
    const onV1 = await call("GET", `/v1/runs/${projected}`, undefined, acme);
    expect(onV1.status).toBe(404);
  });

  it("an unknown, malformed or repeated OpenWOP-Version, or a v2 header on /v1, is refused and writes nothing", async () => {
    const before = await runCount();
    const body = { workflowId: "conformance-noop" };
    const unknown = await call("POST", "/runs", body, { ...acme, "openwop-version": "3" });
    expectV2Error(unknown, 406, "protocol_version_unsupported");
    expect(unknown.body.details.protocolVersions).toEqual(["1.0", "2.0"]);
    expect(unknown.headers.get("openwop-version")).toBe("1.0");
    expectV2Error(await call("POST", "/runs", body, { ...acme, "openwop-version": "two" }), 400, "validation_error");
    expectV2Error(await call("POST", "/runs", body, { ...acme, "openwop-version": "2, 2" }), 400, "validation_error");
    const repeated = await rawGet(t.baseUrl, "/.well-known/openwop", [
      ["OpenWOP-Version", "2"],
      ["OpenWOP-Version", "1"],
    ]);
    expectV2Error(repeated, 400, "validation_error");
    const mismatch = await call("POST", "/v1/runs", body, { ...acme, ...V2 });
    expectV2Error(mismatch, 400, "protocol_version_mismatch");
    expect(mismatch.headers.get("openwop-version")).toBe("1.0");
    // Header-less on an unversioned path is an OpenWOP 1 request, and OpenWOP 1 has no /runs.
    const headerless = await call("POST", "/runs", body, acme);
    expectV2Error(headerless, 400, "validation_error");
    expect(headerless.headers.get("openwop-version")).toBe("1.0");
    // No credential: refused under the major asked for, in its envelope.
    const anonymous = await call("POST", "/runs", body, V2);
    expectV2Error(anonymous, 401, "unauthenticated");
    expect(anonymous.headers.get("openwop-version")).toBe("2.0");
    expect(await runCount()).toBe(before);
    // "2.0" selects major 2 as "2" does; "1" on /v1 is fine.
    expect(
      (await call("GET", "/runs/acme~2Fno-such-run-0000000000", undefined, { ...acme, "openwop-version": "2.0" }))
        .status,
    ).toBe(404);
    const one = await call("GET", "/.well-known/openwop", undefined, { "openwop-version": "1" });
    expect(one.status).toBe(200);
    expect(one.body.protocolVersion).toBe("1.0");
  });

  it("bound ids: another tenant's is 403 id_tenant_mismatch whether or not it exists; malformed ones are 400", async () => {
    const created = await call("POST", "/runs", { workflowId: "conformance-approval" }, { ...acme, ...V2 });
    const projected = (created.body.runId as string).replace("/", "~2F");
    const opaque = (created.body.runId as string).split("/")[1]!;
    const asGlobex = { ...globex, ...V2 };
    const foreign = await call("GET", `/runs/${projected}`, undefined, asGlobex);
    expectV2Error(foreign, 403, "id_tenant_mismatch");
    const foreignMissing = await call("GET", `/runs/acme~2F${randomUUID()}`, undefined, asGlobex);
    expectV2Error(foreignMissing, 403, "id_tenant_mismatch");
    expect(foreignMissing.body.message).toBe(foreign.body.message);
    // A cancel naming acme's run from globex changes nothing.
    expectV2Error(await call("POST", `/runs/${projected}/cancel`, {}, asGlobex), 403, "id_tenant_mismatch");
    const still = await call("GET", `/runs/${projected}`, undefined, { ...acme, ...V2 });
    expect(still.body.status).not.toMatch(/^cancel/);
    // The bare opaque part under globex's own tenant is globex's namespace: no such run there.
    expectV2Error(await call("GET", `/runs/${opaque}`, undefined, asGlobex), 404, "not_found");

    // Interrupt ids are tenant-bound too: in event payloads and in the token surface.
    let suspended: Answer;
    do suspended = await call("GET", `/runs/${projected}/events/poll?timeout=1`, undefined, { ...acme, ...V2 });
    while (!suspended.body.events.some((e: { type: string }) => e.type === "interrupt.requested"));
    const requested = suspended.body.events.find((e: { type: string }) => e.type === "interrupt.requested");
    expect(requested.runId).toBe(created.body.runId);
    // The v1 interrupt payloads written beside interrupt.requested have no v2 definition.
    expect(suspended.body.events.map((e: { type: string }) => e.type)).not.toContain("approval.requested");
    // interrupt.requested's payload is closed (suspend-request): node.suspended, beside it, names the interrupt.
    const raised = suspended.body.events.find((e: { type: string }) => e.type === "node.suspended");
    expect(raised.payload.interruptId).toMatch(/^acme\/[A-Za-z0-9._~-]{16,128}$/);
    const token = (await call("GET", `/v1/runs/${opaque}`, undefined, acme)).body.interrupts[0].token as string;
    const inspected = await call("GET", `/interrupts/${token}`, undefined, V2);
    expect(inspected.status).toBe(200);
    expect(inspected.headers.get("openwop-version")).toBe("2.0");
    expect(inspected.body).toMatchObject({ runId: created.body.runId, interruptId: raised.payload.interruptId });
    // Only a token-shaped segment is public there: a tenant-prefixed A2A path under "interrupts" still needs a key.
    expect((await call("GET", "/interrupts/extendedAgentCard")).status).toBe(401);

    for (const bad of [`~2F${opaque}`, "acme~2F", "acme~2Fshort", "acme~2", `acme~2F${opaque}~2Fx`]) {
      expectV2Error(await call("GET", `/runs/${bad}`, undefined, { ...acme, ...V2 }), 400, "validation_error");
    }
    // Pause and resume on the v2 paths: the run id answered bound; another tenant's is refused and changes nothing.
    expectV2Error(await call("POST", `/runs/${projected}:pause`, {}, asGlobex), 403, "id_tenant_mismatch");
    const paused = await call("POST", `/runs/${projected}:pause`, { reason: "audit" }, { ...acme, ...V2 });
    expect(paused.status, JSON.stringify(paused.body)).toBe(202);
    expect(paused.body).toMatchObject({ runId: created.body.runId, status: "paused" });
    expectV2Error(await call("POST", `/runs/${projected}:pause`, {}, { ...acme, ...V2 }), 409, "run_state_conflict");
    const resumed = await call("POST", `/runs/${projected}:resume`, {}, { ...acme, ...V2 });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(202);
    expect(resumed.body.runId).toBe(created.body.runId);
    expect(resumed.body.status).not.toBe("paused");
    const cancelled = await call("POST", `/runs/${projected}/cancel`, {}, { ...acme, ...V2 });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ runId: created.body.runId, status: expect.stringMatching(/^cancel/) });
  });

  it("/.well-known/openwop is one resource: the v1 document names both majors, the v2 root is closed and valid", async () => {
    const v1 = await call("GET", "/.well-known/openwop");
    expect(v1.headers.get("openwop-version")).toBe("1.0");
    expect(v1.headers.get("vary")).toContain("OpenWOP-Version");
    expect(v1.body).toMatchObject({
      protocolVersion: "1.0",
      protocolVersions: ["1.0", "2.0"],
      preferredVersion: "1.0",
    });
    expect(v1.body.a2a.supported).toBe(true);

    const v2 = await call("GET", "/.well-known/openwop", undefined, V2);
    expect(v2.headers.get("openwop-version")).toBe("2.0");
    expect(v2.headers.get("etag")).not.toBe(v1.headers.get("etag"));
    expect(validateV2Root(v2.body), JSON.stringify(validateV2Root.errors)).toBe(true);
    expect(v2.body).toMatchObject({
      protocolVersions: ["1.0", "2.0"],
      preferredVersion: "1.0",
      eventLogSchemaVersion: 3,
    });
    // The evidence bundles' signing key (generated in the data directory on a first run), as the v1 document lists it.
    expect(v2.body.signingKeys).toEqual(v1.body.signingKeys);
    expect(v2.body.signingKeys).toEqual([expect.objectContaining({ alg: "ed25519", use: "certification-bundle" })]);
    for (const v1Only of ["supportedTransports", "profiles", "grpc", "recoveryEvidence", "limits"])
      expect(v2.body).not.toHaveProperty(v1Only);
    expect(v2.body.a2a).toMatchObject({
      status: "stable",
      since: "2.0",
      preferredVersion: "1.0",
      minimumVersion: "1.0",
    });
    expect(v2.body.a2a.versions).not.toContain("0.3");
    const age = Date.now() - Date.parse(v2.body.a2a.refreshedAt);
    expect(age >= 0 && age < 2 * 86_400_000, v2.body.a2a.refreshedAt).toBe(true); // within interop.md's 90 days
    expect(v2.body.a2a.profiles).toEqual(v2.body.a2a.versions.map((v: string) => `a2a-${v}`));
    expect(v2.body.a2a.agentCardUrl).toBe(`${t.baseUrl}/.well-known/agent-card.json?A2A-Version=1.0`);
    expect(v2.body.auth.lanes).toEqual([
      { lane: "api-key", issuers: ["urn:127.0.0.1:api-key"], revocation: "next-request", minimumAssurance: "bearer" },
    ]);
    // Each representation revalidates on its own ETag.
    const again = await fetch(`${t.baseUrl}/.well-known/openwop`, {
      headers: { ...V2, "if-none-match": v2.headers.get("etag")! },
    });
    expect(again.status).toBe(304);
    expect(again.headers.get("openwop-version")).toBe("2.0");
    // The schema check itself can fail: a v1 key on the v2 root is refused.
    expect(validateV2Root({ ...v2.body, supportedTransports: ["rest"] })).toBe(false);

    expectV2Error(
      await call("GET", "/.well-known/openwop", undefined, { "openwop-version": "9" }),
      406,
      "protocol_version_unsupported",
    );
  });

  it("the era key: a run written without one (a v1-era document) reads as 2 and is not rewritten", async () => {
    const created = await call("POST", "/v1/runs", { workflowId: "conformance-noop" }, acme);
    const bare = created.body.runId as string;
    // What a v1-era host left: the same head without the field.
    await db.collection("tasks").updateOne({ _id: bare as never }, { $unset: { eventLogSchemaVersion: "" } });
    const read = await call("GET", `/runs/acme~2F${bare}`, undefined, { ...acme, ...V2 });
    expect(read.body.eventLogSchemaVersion).toBe(2);
    const head = await db.collection("tasks").findOne({ _id: bare as never });
    expect(head).not.toHaveProperty("eventLogSchemaVersion");
  });
});

describe("the overlap ended (OPENWOP_V1=retired)", () => {
  let client: MongoClient;
  let t: TestApp;
  let call: ReturnType<typeof openwopClient>["call"];
  const acme = { authorization: `Bearer ${ACME}` };

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"));
    t = await startHost(client.db(`v2r_${randomUUID().slice(0, 8)}`), client, { OPENWOP_V1: "retired" });
    call = openwopClient(t.baseUrl).call;
  });
  afterAll(async () => {
    await t?.close();
    await client?.close();
  });

  it("serves OpenWOP 2 only: header-less means 2, /v1 is gone, bare ids are refused", async () => {
    const doc = await call("GET", "/.well-known/openwop");
    expect(doc.headers.get("openwop-version")).toBe("2.0");
    expect(validateV2Root(doc.body), JSON.stringify(validateV2Root.errors)).toBe(true);
    expect(doc.body).toMatchObject({ protocolVersions: ["2.0"], preferredVersion: "2.0", protocolVersion: "2.0" });
    expectV2Error(
      await call("GET", "/.well-known/openwop", undefined, { "openwop-version": "1" }),
      406,
      "protocol_version_unsupported",
    );

    const gone = await call("POST", "/v1/runs", { workflowId: "conformance-noop" }, acme);
    expectV2Error(gone, 404, "not_found");
    expect(gone.headers.get("openwop-version")).toBe("2.0");
    expectV2Error(await call("GET", "/v1/openapi.json", undefined, acme), 404, "not_found");
    expect((await call("GET", "/openapi.json", undefined, acme)).status).toBe(200);

    const created = await call("POST", "/runs", { workflowId: "conformance-noop" }, acme);
    expect(created.status).toBe(201);
    expect(created.headers.get("openwop-version")).toBe("2.0");
    const opaque = (created.body.runId as string).split("/")[1]!;
    expectV2Error(await call("GET", `/runs/${opaque}`, undefined, acme), 400, "validation_error");
    expect((await call("GET", `/runs/acme~2F${opaque}`, undefined, acme)).status).toBe(200);
  });
});

describe("a client-version floor (OPENWOP_MIN_CLIENT_VERSION)", () => {
  let client: MongoClient;
  let db: Db;
  let t: TestApp;
  let call: ReturnType<typeof openwopClient>["call"];
  const acme = { authorization: `Bearer ${ACME}` };

  beforeAll(async () => {
    client = await MongoClient.connect(inject("mongoUri"));
    db = client.db(`v2f_${randomUUID().slice(0, 8)}`);
    t = await startHost(db, client, { OPENWOP_MIN_CLIENT_VERSION: "2.1" });
    call = openwopClient(t.baseUrl).call;
  });
  afterAll(async () => {
    await t?.close();
    await client?.close();
  });

  it("is advertised, refuses an older announced client with 426, and serves one that announces nothing", async () => {
    const doc = await call("GET", "/.well-known/openwop", undefined, V2);
    expect(validateV2Root(doc.body), JSON.stringify(validateV2Root.errors)).toBe(true);
    expect(doc.body.minClientVersion).toBe("2.1");

    const before = await db.collection("tasks").countDocuments();
    const old = await call(
      "POST",
      "/runs",
      { workflowId: "conformance-noop" },
      { ...acme, ...V2, "openwop-client-version": "2.0.3" },
    );
    expectV2Error(old, 426, "client_version_unsupported");
    expect(old.body.details).toEqual({ minClientVersion: "2.1" });
    expect(old.headers.get("openwop-version")).toBe("2.0");
    expect(await db.collection("tasks").countDocuments()).toBe(before);
    const refusedDoc = await call("GET", "/.well-known/openwop", undefined, { ...V2, "openwop-client-version": "1.9" });
    expectV2Error(refusedDoc, 426, "client_version_unsupported");

    const fines: Array<Record<string, string>> = [
      {},
      { "openwop-client-version": "2.1.0" },
      { "openwop-client-version": "v2" },
    ];
    for (const fine of fines) {
      const created = await call("POST", "/runs", { workflowId: "conformance-noop" }, { ...acme, ...V2, ...fine });
      expect(created.status, JSON.stringify(fine)).toBe(201);
    }
    // OpenWOP 1 requests are not measured against an OpenWOP 2 floor.
    const v1 = await call("GET", "/.well-known/openwop", undefined, { "openwop-client-version": "1.0" });
    expect(v1.status).toBe(200);
  });
});
