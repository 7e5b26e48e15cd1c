/**
 * A kustomize build of deploy/kubernetes for machines without kubectl: exactly the features those manifests use,
 * and a loud error for any other, so a manifest change that needs more cannot pass here unnoticed.
 * test/unit/kustomize-render.test.ts checks it against `kubectl kustomize` wherever kubectl is installed, and its
 * name hash against values kustomize computed.
 *
 * Supported: `resources` (files and folders with a kustomization), `components`, `configMapGenerator` with `files`,
 * `secretGenerator` with `literals`, `patches` in JSON 6902 form (test, add, replace, remove) targeted by kind and
 * name; generated names get kustomize's content hash, and pod templates' references to them follow.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parse, parseAllDocuments } from "yaml";

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: unknown };
  [k: string]: unknown;
};

interface Patch {
  target: { kind: string; name: string };
  patch: string;
}

interface Kustomization {
  apiVersion: string;
  kind: "Kustomization" | "Component";
  resources?: string[];
  components?: string[];
  configMapGenerator?: Array<{ name: string; files: string[] }>;
  secretGenerator?: Array<{ name: string; literals: string[] }>;
  patches?: Patch[];
}

const KNOWN_FIELDS = new Set([
  "apiVersion",
  "kind",
  "resources",
  "components",
  "configMapGenerator",
  "secretGenerator",
  "patches",
]);

/**
 * A string as Go's encoding/json writes it (kustomize hashes Go's encoding): `<`, `>`, `&`, U+2028 and U+2029
 * escaped, control characters as \uXXXX except \n, \r, \t.
 */
function goJsonString(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || ch === "<" || ch === ">" || ch === "&" || code === 0x2028 || code === 0x2029)
      out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** Go's json.Marshal of a map: keys sorted, no spaces. */
function goJson(value: unknown): string {
  if (typeof value === "string") return goJsonString(value);
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${goJsonString(k)}:${goJson(v)}`).join(",")}}`;
  }
  throw new Error(`kustomize-render: cannot hash ${typeof value}`);
}

/**
 * kustomize's name suffix (api/hasher): the first 10 hex digits of a SHA-256 of `{data, kind, name[, type]}` in Go's
 * JSON, vowels and look-alikes replaced. The name hashed is always "": kustomize looks it up as one field called
 * "metadata/name", which no object has (so two generators with the same content get the same suffix).
 */
export function kustomizeHash(
  object:
    | { kind: "ConfigMap"; data: Record<string, string> }
    | { kind: "Secret"; type: string; data: Record<string, string> },
): string {
  const hex = createHash("sha256")
    .update(goJson({ ...object, name: "" }))
    .digest("hex");
  const swap: Record<string, string> = { "0": "g", "1": "h", "3": "k", a: "m", e: "t" };
  return [...hex.slice(0, 10)].map((c) => swap[c] ?? c).join("");
}

/**
 * A Secret value as kustomize writes it (and hashes it): base64 in lines of 70 characters, each ending in a line
 * break once there is more than one (encoded length 70 or more); a shorter one has none.
 */
export function kustomizeBase64(value: string): string {
  const encoded = Buffer.from(value).toString("base64");
  if (encoded.length < 70) return encoded;
  return (encoded.match(/.{1,70}/g) ?? []).map((line) => `${line}\n`).join("");
}

function readKustomization(dir: string): Kustomization {
  const file = join(dir, "kustomization.yaml");
  const k = parse(readFileSync(file, "utf8")) as Kustomization;
  const unknown = Object.keys(k).filter((key) => !KNOWN_FIELDS.has(key));
  if (unknown.length > 0)
    throw new Error(
      `kustomize-render: ${file} uses ${unknown.join(", ")}, which this renderer does not implement (use kubectl kustomize, or extend test/support/kustomize-render.ts)`,
    );
  return k;
}

function readResources(path: string): K8sObject[] {
  if (statSync(path).isDirectory()) return build(path);
  return parseAllDocuments(readFileSync(path, "utf8"))
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** A JSON pointer's segments (RFC 6901). */
function pointer(path: string): string[] {
  return path
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function applyJson6902(target: K8sObject, ops: Array<{ op: string; path: string; value?: unknown }>): void {
  for (const { op, path, value } of ops) {
    const segments = pointer(path);
    const last = segments.pop()!;
    let parent: unknown = target;
    for (const s of segments) {
      parent = (parent as Record<string, unknown>)[s];
      if (parent === undefined) throw new Error(`kustomize-render: ${path} does not exist`);
    }
    const container = parent as Record<string, unknown> & unknown[];
    const index = Array.isArray(container) ? (last === "-" ? container.length : Number(last)) : undefined;
    switch (op) {
      case "test":
        if (!isDeepStrictEqual(index !== undefined ? container[index] : container[last], value))
          throw new Error(`kustomize-render: test of ${path} failed`);
        break;
      case "add":
        if (index !== undefined) container.splice(index, 0, value);
        else container[last] = value;
        break;
      case "replace":
        if ((index !== undefined ? container[index] : container[last]) === undefined)
          throw new Error(`kustomize-render: replace of ${path}, which does not exist`);
        if (index !== undefined) container[index] = value;
        else container[last] = value;
        break;
      case "remove":
        if (index !== undefined) container.splice(index, 1);
        else delete container[last];
        break;
      default:
        throw new Error(`kustomize-render: JSON patch op "${op}" is not implemented`);
    }
  }
}

/** Every place a pod template names a ConfigMap or Secret, renamed where the name was generated. */
function renameReferences(object: K8sObject, renamed: Map<string, string>): void {
  const spec = (object["spec"] as { template?: { spec?: Record<string, unknown> } } | undefined)?.template?.spec;
  if (!spec) return;
  const rename = (holder: Record<string, unknown> | undefined, field: string, kind: string): void => {
    const name = holder?.[field];
    if (typeof name === "string" && renamed.has(`${kind}/${name}`)) holder![field] = renamed.get(`${kind}/${name}`);
  };
  for (const volume of (spec["volumes"] as Array<Record<string, Record<string, unknown>>> | undefined) ?? []) {
    rename(volume["configMap"], "name", "ConfigMap");
    rename(volume["secret"], "secretName", "Secret");
    for (const source of (volume["projected"]?.["sources"] as
      Array<Record<string, Record<string, unknown>>> | undefined) ?? []) {
      rename(source["configMap"], "name", "ConfigMap");
      rename(source["secret"], "name", "Secret");
    }
  }
  const containers = [
    ...((spec["containers"] as unknown[]) ?? []),
    ...((spec["initContainers"] as unknown[]) ?? []),
  ] as Array<Record<string, unknown>>;
  for (const container of containers) {
    for (const env of (container["env"] as
      Array<{ valueFrom?: Record<string, Record<string, unknown>> }> | undefined) ?? []) {
      rename(env.valueFrom?.["configMapKeyRef"], "name", "ConfigMap");
      rename(env.valueFrom?.["secretKeyRef"], "name", "Secret");
    }
    for (const from of (container["envFrom"] as Array<Record<string, Record<string, unknown>>> | undefined) ?? []) {
      rename(from["configMapRef"], "name", "ConfigMap");
      rename(from["secretRef"], "name", "Secret");
    }
  }
}

/** The objects of the kustomization in `dir`, as `kubectl kustomize dir` builds them (order aside). */
export function build(dir: string): K8sObject[] {
  const k = readKustomization(dir);
  const objects: K8sObject[] = (k.resources ?? []).flatMap((r) => readResources(resolve(dir, r)));
  const renamed = new Map<string, string>();
  for (const component of k.components ?? []) {
    const componentDir = resolve(dir, component);
    if (readKustomization(componentDir).kind !== "Component")
      throw new Error(`kustomize-render: ${componentDir} is not a Component`);
    objects.push(...applyKustomization(componentDir, objects, renamed));
  }
  objects.push(...applyKustomization(dir, objects, renamed, { skipResources: true }));
  for (const object of objects) renameReferences(object, renamed);
  return objects;
}

/** A kustomization's generators and patches over `objects`; returns what it adds (a component's resources too). */
function applyKustomization(
  dir: string,
  objects: K8sObject[],
  renamed: Map<string, string>,
  { skipResources = false } = {},
): K8sObject[] {
  const k = readKustomization(dir);
  const added: K8sObject[] = skipResources ? [] : (k.resources ?? []).flatMap((r) => readResources(resolve(dir, r)));
  for (const generator of k.configMapGenerator ?? []) {
    const data = Object.fromEntries(generator.files.map((f) => [basename(f), readFileSync(resolve(dir, f), "utf8")]));
    const name = `${generator.name}-${kustomizeHash({ kind: "ConfigMap", data })}`;
    renamed.set(`ConfigMap/${generator.name}`, name);
    added.push({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data });
  }
  for (const generator of k.secretGenerator ?? []) {
    const data = Object.fromEntries(
      generator.literals.map((literal) => {
        const eq = literal.indexOf("=");
        return [literal.slice(0, eq), kustomizeBase64(literal.slice(eq + 1))];
      }),
    );
    const name = `${generator.name}-${kustomizeHash({ kind: "Secret", type: "Opaque", data })}`;
    renamed.set(`Secret/${generator.name}`, name);
    added.push({ apiVersion: "v1", kind: "Secret", metadata: { name }, type: "Opaque", data });
  }
  for (const patch of k.patches ?? []) {
    const all = [...objects, ...added];
    const targets = all.filter((o) => o.kind === patch.target.kind && o.metadata.name === patch.target.name);
    if (targets.length !== 1)
      throw new Error(
        `kustomize-render: patch target ${patch.target.kind}/${patch.target.name} matches ${targets.length} objects`,
      );
    const ops = parse(patch.patch) as Array<{ op: string; path: string; value?: unknown }>;
    if (!Array.isArray(ops))
      throw new Error("kustomize-render: only JSON 6902 patches (a list of operations) are implemented");
    applyJson6902(targets[0]!, ops);
  }
  return added;
}

/** `kubectl kustomize dir` when kubectl is installed, else undefined. */
export function kubectlKustomize(dir: string): K8sObject[] | undefined {
  let out: string;
  try {
    out = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  return parseAllDocuments(out).map((doc) => doc.toJS() as K8sObject);
}

export function kubectlInstalled(): boolean {
  return (process.env["PATH"] ?? "").split(":").some((dir) => dir !== "" && existsSync(join(dir, "kubectl")));
}

/** What the tests validate: kubectl's build where it is installed, else this renderer's. */
export function renderOverlay(dir: string): { objects: K8sObject[]; by: "kubectl kustomize" | "the Node renderer" } {
  const viaKubectl = kubectlKustomize(dir);
  return viaKubectl
    ? { objects: viaKubectl, by: "kubectl kustomize" }
    : { objects: build(dir), by: "the Node renderer" };
}
