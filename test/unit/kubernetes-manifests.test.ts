// deploy/kubernetes, rendered as an operator applies it (`kubectl kustomize` where installed, else the Node renderer,
// test/support/kustomize-render.ts) and checked against the Kubernetes 1.36 schemas (kubernetes-models, compiled
// from the release's OpenAPI with ajv; the ServiceMonitor against @kubernetes-models/prometheus-operator), then the
// properties the issue asks of them, and the Deployment's configuration run through the host's own start-up check.
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ipaddr from "ipaddr.js";
import { beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { generateProductionKeys } from "../../src/config/production-keys.js";
import { SECRET_VARIABLES } from "../../src/config/secret-files.js";
import { KUBERNETES_SECRET_NAME } from "../../src/cli/keys-output.js";
import { projectRoot } from "../../src/domain/project-root.js";
import { V4_REFUSED, V6_GLOBAL_UNICAST, V6_REFUSED, type Cidr } from "../../src/egress/egress-addresses.js";
import { settleHost } from "../../src/start-host.js";
import { renderOverlay, type K8sObject } from "../support/kustomize-render.js";

const OVERLAYS = ["try", "production"] as const;
const rendered = new Map<string, K8sObject[]>();

beforeAll(() => {
  for (const overlay of OVERLAYS) {
    const { objects, by } = renderOverlay(join(projectRoot, "deploy", "kubernetes", "overlays", overlay));
    console.log(`deploy/kubernetes/overlays/${overlay}: rendered by ${by}`);
    rendered.set(overlay, objects);
  }
});

/** The model that validates an object: kubernetes-models' module for its group, version and kind. */
async function modelOf(object: K8sObject): Promise<{ validate(): void }> {
  const [group, version] = object.apiVersion.includes("/") ? object.apiVersion.split("/") : ["", object.apiVersion];
  const module =
    group === "monitoring.coreos.com"
      ? `@kubernetes-models/prometheus-operator/${group}/${version}/${object.kind}`
      : `kubernetes-models/${group ? `${group}/` : ""}${version}/${object.kind}`;
  const exports = (await import(module)) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = exports[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  return new Model(object);
}

/**
 * kustomize writes a generated Secret's base64 in lines of 70 characters; the API server's decoder skips line breaks,
 * the schema's "byte" format does not, so they are taken out before the check (and only from Secret data).
 */
function withUnwrappedSecretData(object: K8sObject): K8sObject {
  if (object.kind !== "Secret" || !object["data"]) return object;
  const data = Object.fromEntries(
    Object.entries(object["data"] as Record<string, string>).map(([k, v]) => [k, v.replace(/\n/g, "")]),
  );
  return { ...object, data };
}

function one(overlay: string, kind: string, name = "openwop-a2a-host"): K8sObject & { spec: Record<string, any> } {
  const found = rendered.get(overlay)!.filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found, `${overlay}: ${kind}/${name}`).toHaveLength(1);
  return found[0] as K8sObject & { spec: Record<string, any> };
}

interface Container {
  image: string;
  env: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  [k: string]: any;
}

const container = (overlay: string): Container =>
  one(overlay, "Deployment").spec["template"].spec.containers[0] as Container;
const envOf = (overlay: string): Record<string, string> =>
  Object.fromEntries(container(overlay).env.flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : [])));

describe.each(OVERLAYS)("deploy/kubernetes/overlays/%s", (overlay) => {
  it("renders objects that validate against the Kubernetes 1.36 schemas", async () => {
    const objects = rendered.get(overlay)!;
    expect(objects.length).toBeGreaterThan(5);
    for (const object of objects) {
      const model = await modelOf(withUnwrappedSecretData(object));
      expect(() => model.validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
  });

  it("runs at least two instances, each named after its pod, probed on /healthz and /readyz", () => {
    const deployment = one(overlay, "Deployment");
    expect(deployment.spec["replicas"]).toBeGreaterThanOrEqual(2);
    const c = container(overlay);
    expect(c.env.find((e) => e.name === "INSTANCE_ID")?.valueFrom?.fieldRef?.fieldPath).toBe("metadata.name");
    // Shedding new tasks keeps the pod in the Service: it still serves replies and reads (operating.md "Overload shedding").
    expect(c["readinessProbe"].httpGet.path).toBe("/readyz?shedding=ready");
    expect(c["livenessProbe"].httpGet.path).toBe("/healthz");
    expect(c["startupProbe"].httpGet.path).toBe("/healthz");
    expect(envOf(overlay)["NODE_ENV"]).toBe("production");
  });

  it("gives the drain (preStop, SHUTDOWN_GRACE_MS, the CLI's 5 s deadline) less time than the kubelet's grace period", () => {
    const pod = one(overlay, "Deployment").spec["template"].spec;
    const c = container(overlay);
    const preStopMs = Number(c["lifecycle"].preStop.exec.command[1]) * 1000;
    const graceMs = Number(envOf(overlay)["SHUTDOWN_GRACE_MS"]);
    expect(preStopMs + graceMs + 5_000).toBeLessThan(pod.terminationGracePeriodSeconds * 1000);
  });

  it("runs restricted: non-root, read-only root, no capabilities, seccomp RuntimeDefault, writable paths on emptyDirs", () => {
    const pod = one(overlay, "Deployment").spec["template"].spec;
    const c = container(overlay);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(c["securityContext"]).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(pod.automountServiceAccountToken).toBe(false);
    const emptyDirs = new Set(
      pod.volumes.filter((v: { emptyDir?: unknown }) => v.emptyDir).map((v: { name: string }) => v.name),
    );
    const writable = c["volumeMounts"].filter((m: { readOnly?: boolean }) => !m.readOnly);
    expect(writable.map((m: { mountPath: string }) => m.mountPath).sort()).toEqual(
      [envOf(overlay)["DATA_DIR"], "/tmp"].sort(),
    );
    for (const mount of writable) expect(emptyDirs.has(mount.name), mount.mountPath).toBe(true);
  });

  it("asks for resources and caps them", () => {
    const { requests, limits } = container(overlay)["resources"];
    expect(requests).toEqual({ cpu: "250m", memory: "256Mi" });
    expect(limits).toEqual({ cpu: "1", memory: "512Mi" });
  });

  it("runs the image of this package's version", async () => {
    const { version } = JSON.parse(await readFile(join(projectRoot, "package.json"), "utf8")) as { version: string };
    expect(container(overlay).image).toBe(`ghcr.io/openwop/openwop-a2a-host:${version}`);
  });

  it("exposes the one port as h2c, with a disruption budget and an autoscaler for the Deployment", () => {
    const [port] = one(overlay, "Service").spec["ports"];
    expect(port).toMatchObject({ port: 8080, targetPort: "http", appProtocol: "kubernetes.io/h2c" });
    expect(container(overlay)["ports"]).toEqual([{ name: "http", containerPort: 8080, protocol: "TCP" }]);
    const selector = one(overlay, "Deployment").spec["selector"].matchLabels;
    expect(one(overlay, "Service").spec["selector"]).toEqual(selector);
    expect(one(overlay, "PodDisruptionBudget").spec["selector"].matchLabels).toEqual(selector);
    const hpa = one(overlay, "HorizontalPodAutoscaler").spec;
    expect(hpa["scaleTargetRef"]).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "openwop-a2a-host" });
    expect(hpa["minReplicas"]).toBeGreaterThanOrEqual(2);
  });

  it("refuses in its NetworkPolicy exactly the ranges the egress guard refuses, and lets DNS and MongoDB out", () => {
    const policy = one(overlay, "NetworkPolicy").spec;
    expect(policy["policyTypes"]).toEqual(["Ingress", "Egress"]);
    const egress = policy["egress"] as Array<{
      to?: Array<{ ipBlock?: { cidr: string; except: string[] } }>;
      ports: Array<{ port: number }>;
    }>;
    expect(egress.some((r) => r.ports.some((p) => p.port === 53))).toBe(true);
    expect(egress.some((r) => r.ports.some((p) => p.port === 27017))).toBe(true);
    const world = egress.find((r) => r.to?.some((t) => t.ipBlock))!;
    expect(world.ports).toEqual([{ port: 443, protocol: "TCP" }]);
    const v4 = world
      .to!.find((t) => t.ipBlock!.cidr === "0.0.0.0/0")!
      .ipBlock!.except.map((c) => ipaddr.parseCIDR(c) as Cidr);
    const v6Block = world.to!.find((t) => t.ipBlock!.cidr !== "0.0.0.0/0")!.ipBlock!;
    expect(v6Block.cidr).toBe(V6_GLOBAL_UNICAST.join("/"));
    const v6 = v6Block.except.map((c) => ipaddr.parseCIDR(c) as Cidr);
    const within = (inner: Cidr, outer: Cidr) =>
      inner[0].kind() === outer[0].kind() && inner[1] >= outer[1] && inner[0].match(outer);
    // Every range the guard refuses is left out (IPv6 outside 2000::/3 is never allowed in)...
    for (const [range, why] of V4_REFUSED)
      expect(
        v4.some((e) => within(range, e)),
        `${range.join("/")} (${why})`,
      ).toBe(true);
    for (const [range, why] of V6_REFUSED)
      if (within(range, V6_GLOBAL_UNICAST))
        expect(
          v6.some((e) => within(range, e)),
          `${range.join("/")} (${why})`,
        ).toBe(true);
    // ...and nothing else, but 6to4 (2002::/16), whose embedded IPv4 address the guard checks and a NetworkPolicy cannot.
    for (const entry of v4)
      expect(
        V4_REFUSED.some(([range]) => within(entry, range)),
        entry.join("/"),
      ).toBe(true);
    for (const entry of v6)
      expect(
        entry.join("/") === "2002::/16" || V6_REFUSED.some(([range]) => within(entry, range)),
        entry.join("/"),
      ).toBe(true);
  });

  it("reads every secret from the mounted Secrets through <NAME>_FILE, and nothing secret inline", () => {
    const env = envOf(overlay);
    const pod = one(overlay, "Deployment").spec["template"].spec;
    const secretsMount = container(overlay)["volumeMounts"].find((m: { name: string }) => m.name === "secrets")
      .mountPath as string;
    for (const name of SECRET_VARIABLES) expect(env[name], `${name} inline`).toBeUndefined();
    const files = Object.entries(env).filter(([name]) => name.endsWith("_FILE"));
    for (const [name, path] of files) {
      expect(SECRET_VARIABLES as readonly string[]).toContain(name.slice(0, -"_FILE".length));
      expect(path).toBe(`${secretsMount}/${name.slice(0, -"_FILE".length)}`);
    }
    const sources = pod.volumes
      .find((v: { name: string }) => v.name === "secrets")
      .projected.sources.map((s: { secret: { name: string } }) => s.secret.name);
    expect(sources[0]).toBe(KUBERNETES_SECRET_NAME);
    expect(sources[1]).toMatch(/^openwop-a2a-host-mongodb(-[a-z0-9]{10})?$/);
  });
});

describe("the Deployment's configuration, as the host reads it", () => {
  /** The pod's files, on this machine: the workflows ConfigMap and the two Secrets, at the paths the env names. */
  async function podEnv(
    overlay: string,
    secrets: Record<string, string>,
  ): Promise<{ env: Record<string, string>; root: string }> {
    const root = await mkdtemp(join(tmpdir(), `k8s-${overlay}-`));
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(envOf(overlay)))
      env[name] = value.startsWith("/") ? join(root, value) : value;
    env["INSTANCE_ID"] = "openwop-a2a-host-7d9f8-abcde";
    const workflows = one(
      overlay,
      "ConfigMap",
      rendered.get(overlay)!.find((o) => o.kind === "ConfigMap")!.metadata.name,
    ) as unknown as { data: Record<string, string> };
    await mkdir(env["WORKFLOWS_DIR"]!, { recursive: true });
    for (const [file, text] of Object.entries(workflows.data)) await writeFile(join(env["WORKFLOWS_DIR"]!, file), text);
    const mount = join(root, "var/run/secrets/openwop-a2a-host");
    await mkdir(mount, { recursive: true });
    for (const [name, value] of Object.entries(secrets)) await writeFile(join(mount, name), value, { mode: 0o440 });
    return { env, root };
  }

  it.each(OVERLAYS)(
    "%s: passes a production start's check with the keys command's Secret and a MongoDB URI",
    async (overlay) => {
      const secrets = {
        ...(await generateProductionKeys()),
        MONGODB_URI: "mongodb://mongo-0.mongo:27017/openwop_a2a?replicaSet=rs0",
      };
      const { env } = await podEnv(overlay, secrets);
      const { config, catalog } = await settleHost({}, env, { pickPort: false });
      expect(config.env).toBe("production");
      expect(config.leases.instanceId).toBe("openwop-a2a-host-7d9f8-abcde");
      expect(config.mongodbUri).toBe(secrets.MONGODB_URI);
      expect(catalog.ids()).toEqual(["sign-off"]);
    },
  );

  it("without a key in the Secret, stops with the problem `check` prints: the _FILE variable and the path, no key material", async () => {
    const keys = await generateProductionKeys();
    const { API_KEYS: _left, ...rest } = keys;
    const { env } = await podEnv("production", { ...rest, MONGODB_URI: "mongodb://db.example:27017/openwop" });
    let problems: readonly string[] = [];
    try {
      await settleHost({}, env, { pickPort: false });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems = err.problems;
    }
    // The missing file, then what the settings say without the key (auth needs a way in).
    expect(problems[0]).toBe(`API_KEYS_FILE: ${env["API_KEYS_FILE"]} does not exist`);
    expect(problems.slice(1).join("\n")).toMatch(/^AUTH=on needs API_KEYS/);
    for (const value of Object.values(keys)) expect(problems.join("\n")).not.toContain(value);
  });
});

it("the schema check is real: a Deployment with a wrong type and a missing field fails", async () => {
  const broken = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "x" },
    spec: { replicas: "two", template: {} },
  } as unknown as K8sObject;
  const model = await modelOf(broken);
  expect(() => model.validate()).toThrow(/replicas must be integer|must have required property 'selector'/);
});
