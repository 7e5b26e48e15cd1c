import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
const METHODS = ["get", "post", "delete", "head", "put", "patch"];
/** The console's page and static files (and the favicon browsers ask for at the root): served files, not an API. */
const STATIC_FILES = /^(\/console(\/|\/assets\/.*|\/tasks\/\{taskId\}|\/limits)?|\/favicon\.ico)$/;

describe("GET /v1/openapi.json", () => {
  let t: TestApp;
  let doc: Obj;
  beforeAll(async () => {
    t = await startTestApp({ CONSOLE_ENABLED: "true", CONFORMANCE_SEAMS: "true" });
    const res = await fetch(`${t.baseUrl}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    doc = (await res.json()) as Obj;
  });
  afterAll(() => t.close());

  const documented = () =>
    Object.entries(doc["paths"] as Record<string, Obj>).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((k) => METHODS.includes(k))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
  const registered = () =>
    t.app
      .routes()
      .filter((r) => !STATIC_FILES.test(r.template))
      .flatMap((r) => r.methods.map((m) => `${m} ${r.template}`));

  it("is an OpenAPI 3.1 document whose operations declare their path parameters", () => {
    expect(doc["openapi"]).toBe("3.1.0");
    expect(doc["info"]).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    const ids = new Set<string>();
    for (const [path, item] of Object.entries(doc["paths"] as Record<string, Obj>)) {
      const names = [...path.matchAll(/\{([a-zA-Z]+)\}/g)].map((m) => m[1]);
      for (const method of Object.keys(item)) {
        const op = item[method];
        expect(op["responses"]?.["200"], `${method} ${path}`).toBeDefined();
        expect((op["parameters"] ?? []).map((p: Obj) => p["name"]).sort(), `${method} ${path}`).toEqual(
          [...names].sort(),
        );
        expect(ids.has(op["operationId"]), `duplicate operationId ${op["operationId"]}`).toBe(false);
        ids.add(op["operationId"]);
      }
    }
  });

  it("documents every route the app registers (OpenWOP, discovery, console API, A2A HTTP+JSON 0.3 and 1.0), and no other", () => {
    const routes = registered();
    expect(routes.length).toBeGreaterThan(50);
    expect([...documented()].sort()).toEqual([...new Set(routes)].sort());
  });

  it("every documented operation is served: no 'no route' 404 and no 405", async () => {
    for (const entry of documented()) {
      const [method, path] = entry.split(" ") as [string, string];
      const concrete = path.replace(/\{tenant\}/g, "default").replace(/\{[a-zA-Z]+\}/g, "missing-x");
      const v10 =
        !concrete.startsWith("/v1/") &&
        !concrete.startsWith("/.well-known") &&
        !concrete.startsWith("/console") &&
        !["/healthz", "/readyz", "/metrics"].includes(concrete);
      const controller = new AbortController();
      const res = await fetch(`${t.baseUrl}${concrete}`, {
        method,
        signal: controller.signal,
        headers: {
          ...(v10 ? { "A2A-Version": "1.0" } : {}),
          ...(method === "POST" ? { "content-type": "application/json" } : {}),
        },
        ...(method === "POST" ? { body: "{}" } : {}),
      });
      expect(res.status, entry).not.toBe(405);
      const sse = res.headers.get("content-type")?.includes("text/event-stream");
      const text = sse ? "" : await res.text();
      controller.abort();
      expect(text, entry).not.toContain("no route for");
    }
  });
});
