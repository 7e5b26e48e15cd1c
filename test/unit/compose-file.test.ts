// compose.yaml cannot be run here (no Docker engine): what is checked is that it parses, that each instance's
// environment passes the production configuration check as it is, with the secrets filled in the way the
// file's header says, and that the instances and the replica set agree with each other.
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseDocument } from "yaml";
import { describe, expect, it } from "vitest";
import { testSigningKeys } from "../support/openwop-client.js";
import { loadConfig } from "../../src/config/config.js";
import { projectRoot } from "../../src/domain/project-root.js";

interface Service {
  image?: string;
  restart?: string;
  volumes?: string[];
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const secrets: Record<string, string> = {
  API_KEYS: JSON.stringify([
    { id: "ops", tenant: "default", scopes: ["runs:create", "runs:read"], key: "change-me-at-least-16-chars" },
  ]),
  INTERRUPT_TOKEN_KEYS: `k1:${randomBytes(32).toString("base64")}`,
  PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  PUSH_SIGNING_KEY: randomBytes(48).toString("base64"),
  SIGNING_KEYS: testSigningKeys(),
  A2A_PEER_CALLBACK_KEY: randomBytes(32).toString("base64"),
};

/** What `docker compose` does with `${NAME:?message}` (the value, or a refusal to start) and `${NAME:-default}`. */
const interpolate = (value: string) =>
  value
    .replace(/\$\{(\w+):\?[^}]*\}/g, (_, name: string) => secrets[name] ?? `<unset ${name}>`)
    .replace(/\$\{(\w+):-([^}]*)\}/g, (_, name: string, fallback: string) => secrets[name] ?? fallback);

describe("compose.yaml", async () => {
  const doc = parseDocument(await readFile(join(projectRoot, "compose.yaml"), "utf8"), { merge: true });
  const services = (doc.toJS() as { services: Record<string, Service> }).services;
  const instances = Object.entries(services).filter(([, s]) => s.build === ".");

  it("parses, with one mongod started as replica set rs0 and two instances of our image", () => {
    expect(doc.errors).toEqual([]);
    expect(services["mongo"]?.command).toEqual(["mongod", "--replSet", "rs0", "--bind_ip_all"]);
    expect(services["mongo"]?.healthcheck?.test.join(" ")).toMatch(
      /rs\.initiate\(\{ _id: 'rs0', members: \[\{ _id: 0, host: 'mongo:27017' \}\] \}\)/,
    );
    expect(instances.map(([name]) => name)).toEqual(["a2a-1", "a2a-2"]);
  });

  it("each instance's environment passes the production check, names the replica set, and has its own INSTANCE_ID", () => {
    const ids = new Set<string>();
    for (const [, service] of instances) {
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]),
      );
      expect(env["NODE_ENV"]).toBe("production");
      expect(env["MONGODB_URI"]).toMatch(/^mongodb:\/\/mongo:27017\/[^?]+\?replicaSet=rs0$/);
      const config = loadConfig(env);
      expect(config.leases.instanceId).toBe(env["INSTANCE_ID"]);
      ids.add(config.leases.instanceId);
      expect(service.depends_on).toEqual({ mongo: { condition: "service_healthy" } });
    }
    expect(ids.size).toBe(2);
  });

  it("restarts every service, opens the console, and serves the mounted agent (the example by default)", async () => {
    for (const [name, service] of Object.entries(services)) expect(service.restart, name).toBe("unless-stopped");
    for (const [, service] of instances) {
      const env = Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]),
      );
      const config = loadConfig(env);
      expect(config.operator.console).toBe(true);
      const [source, target] = interpolate((service.volumes ?? [])[0]!).split(":");
      expect(target).toBe("/agent");
      // The default mount is the example agent, whose files the variables name.
      const mounted = (path: string) => join(projectRoot, source!, path.replace(/^\/agent\//, ""));
      expect(config.workflowsDir).toBe("/agent/workflows");
      await expect(readFile(mounted(env["HANDLERS_MODULE"]!), "utf8")).resolves.toContain("export const handlers");
      const { readdir } = await import("node:fs/promises");
      expect(await readdir(mounted(config.workflowsDir!))).toContain("expense.yaml");
    }
  });
});
