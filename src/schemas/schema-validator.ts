// Validation against the JSON Schemas in /schemas (draft 2020-12): the durable A2ATaskState, the
// /.well-known/openwop discovery document and our workflow definitions. The schema files are the
// single source of truth; this module only compiles them (once, on first use) and turns Ajv's
// errors into messages a person can act on ("nodes/1/kind: must be equal to one of the allowed
// values (task, approval, ...)").
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { projectRoot } from "../domain/project-root.js";

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is typed as
// the module object, while at run time it is the plugin function itself. Accept both.
type FormatsPlugin = typeof addFormatsModule.default;
const addFormats: FormatsPlugin =
  (addFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  (addFormatsModule as unknown as FormatsPlugin);

export const SCHEMA_FILES = {
  a2aTaskState: "a2a-task-state.schema.json",
  capabilities: "capabilities.schema.json",
  workflow: "workflow.schema.json",
} as const;

type SchemaName = keyof typeof SCHEMA_FILES;

/** One failed check: a slash-separated path into the value ("" for the root) and a message. */
export interface SchemaIssue {
  path: string;
  message: string;
}

/** Thrown by the validate* functions; `issues` lists every failure, `message` summarizes them. */
export class SchemaValidationError extends Error {
  override readonly name = "SchemaValidationError";
  constructor(
    readonly subject: string,
    readonly issues: readonly SchemaIssue[],
  ) {
    super(`invalid ${subject}: ${issues.map(formatSchemaIssue).join("; ")}`);
  }
}

/**
 * The directory holding the schema files: `schemas/` next to the package.json found by walking up
 * from this module. Works from src/schemas (tsx, vitest) and from dist/src/schemas (compiled).
 */
export function schemasDirectory(): string {
  return join(projectRoot, "schemas");
}

let compiled: Record<SchemaName, ValidateFunction> | undefined;

function newAjv(): Ajv2020 {
  // allErrors: report every problem at once, so a definition can be fixed in one pass.
  // strict: a typo in a schema keyword is a bug in our schema, not something to ignore.
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  return ajv;
}

function readSchema(name: SchemaName): Record<string, unknown> {
  return JSON.parse(readFileSync(join(schemasDirectory(), SCHEMA_FILES[name]), "utf8")) as Record<string, unknown>;
}

function validators(): Record<SchemaName, ValidateFunction> {
  if (compiled) return compiled;
  const ajv = newAjv();
  const load = (name: SchemaName): ValidateFunction => ajv.compile(readSchema(name));
  compiled = {
    a2aTaskState: load("a2aTaskState"),
    capabilities: load("capabilities"),
    workflow: load("workflow"),
  };
  return compiled;
}

function decodePointer(instancePath: string): string {
  return instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join("/");
}

function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "enum":
      return `${error.message ?? "must be equal to one of the allowed values"} (${(params.allowedValues as unknown[])
        .map((value) => JSON.stringify(value))
        .join(", ")})`;
    case "additionalProperties":
      return `must NOT have additional property '${String(params.additionalProperty)}'`;
    case "const":
      return `must be equal to ${JSON.stringify(params.allowedValue)}`;
    default:
      return error.message ?? `failed ${error.keyword}`;
  }
}

/** Ajv errors as issues: paths decoded, duplicates and `if` summaries removed. */
export function ajvErrorsToIssues(errors: readonly ErrorObject[] | null | undefined): SchemaIssue[] {
  const seen = new Set<string>();
  const issues: SchemaIssue[] = [];
  for (const error of errors ?? []) {
    // 'must match "then" schema' only repeats the errors already reported inside the branch.
    if (error.keyword === "if") continue;
    const issue = { path: decodePointer(error.instancePath), message: describe(error) };
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

/** One issue as a line: "nodes/1/kind: must be …" ("(root)" for the whole value). */
export function formatSchemaIssue(issue: SchemaIssue): string {
  return `${issue.path === "" ? "(root)" : issue.path}: ${issue.message}`;
}

/** Human-readable, one line per failure: "nodes/1/kind: must be equal to one of the allowed values (...)". */
export function formatAjvErrors(errors: readonly ErrorObject[] | null | undefined): string {
  return ajvErrorsToIssues(errors).map(formatSchemaIssue).join("\n");
}

/** Workflow validators for node kinds beyond the published schema (registered from outside src), by their fragments. */
const extended = new Map<string, ValidateFunction>();

/**
 * The workflow schema with more node kinds: each fragment joins `$defs`, the kind's name the enum, and an if/then
 * branch picks it, exactly as the published schema does for the built-in kinds.
 */
function workflowValidatorWith(extraKinds: Readonly<Record<string, Record<string, unknown>>>): ValidateFunction {
  const key = JSON.stringify(extraKinds);
  let validate = extended.get(key);
  if (validate) return validate;
  const schema = readSchema("workflow") as {
    $id?: string;
    $defs: Record<string, { properties: { kind: { enum: string[] } }; allOf: unknown[] }>;
  };
  delete schema.$id; // one compiled schema per id in an Ajv instance; this one is a variant
  const node = schema.$defs["Node"]!;
  for (const [name, fragment] of Object.entries(extraKinds)) {
    const def = `Kind_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
    (schema.$defs as Record<string, unknown>)[def] = fragment;
    node.properties.kind.enum.push(name);
    node.allOf.push({
      if: { type: "object", required: ["kind"], properties: { kind: { const: name } } },
      then: { $ref: `#/$defs/${def}` },
    });
  }
  validate = newAjv().compile(schema);
  extended.set(key, validate);
  return validate;
}

function validateWith(
  name: SchemaName,
  subject: string,
  value: unknown,
  validate: ValidateFunction = validators()[name],
): void {
  if (!validate(value)) {
    throw new SchemaValidationError(subject, ajvErrorsToIssues(validate.errors));
  }
}

/** Throws SchemaValidationError unless `value` is a valid A2ATaskState document. */
export function validateA2ATaskState(value: unknown): void {
  validateWith("a2aTaskState", "A2A task state", value);
}

/** Throws SchemaValidationError unless `value` is a valid /.well-known/openwop document. */
export function validateCapabilities(value: unknown): void {
  validateWith("capabilities", "capabilities document", value);
}

interface NodeRefs {
  id?: unknown;
  artifactFrom?: unknown;
  onReject?: unknown;
  onRefine?: unknown;
  next?: unknown;
  default?: unknown;
  cases?: Array<{ goto?: unknown }>;
}

function gotoTarget(value: unknown): unknown {
  return typeof value === "object" && value !== null ? (value as { goto?: unknown }).goto : undefined;
}

/**
 * Throws SchemaValidationError unless `value` is a valid workflow definition. Beyond the schema it
 * checks what JSON Schema cannot express: node ids are unique, and artifactFrom (each, `$taken` aside) / onReject.goto /
 * onRefine.goto / next / a switch's goto and default name a node of the same workflow (or `$end`).
 */
export function validateWorkflowDefinition(
  value: unknown,
  extraKinds: Readonly<Record<string, Record<string, unknown>>> = {},
): void {
  validateWith(
    "workflow",
    "workflow definition",
    value,
    Object.keys(extraKinds).length > 0 ? workflowValidatorWith(extraKinds) : undefined,
  );
  const nodes = (value as { nodes: NodeRefs[] }).nodes;
  const issues: SchemaIssue[] = [];
  const ids = new Set<string>();
  nodes.forEach((node, index) => {
    const id = node.id as string;
    if (ids.has(id)) issues.push({ path: `nodes/${index}/id`, message: `duplicate node id '${id}'` });
    ids.add(id);
  });
  nodes.forEach((node, index) => {
    const refs: [string, unknown][] = [
      ...(Array.isArray(node.artifactFrom)
        ? node.artifactFrom.map((id, i): [string, unknown] => [`artifactFrom/${i}`, id])
        : node.artifactFrom === "$taken"
          ? []
          : [["artifactFrom", node.artifactFrom] as [string, unknown]]),
      ["onReject/goto", gotoTarget(node.onReject)],
      ["onRefine/goto", gotoTarget(node.onRefine)],
      ["next", node.next],
      ["default", node.default],
      ...(node.cases ?? []).map((c, i): [string, unknown] => [`cases/${i}/goto`, c.goto]),
    ];
    for (const [field, target] of refs) {
      if (typeof target === "string" && target !== "$end" && !ids.has(target)) {
        issues.push({ path: `nodes/${index}/${field}`, message: `unknown node id '${target}'` });
      }
    }
  });
  if (issues.length > 0) throw new SchemaValidationError("workflow definition", issues);
}
