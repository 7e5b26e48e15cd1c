import type { AgentIdentity } from "./a2a/agent-card-settings.js";
import { readSecretFiles } from "./config/secret-files.js";
import type { Env } from "./domain/env-settings.js";
import type { AnyNodeKind } from "./engine/nodes/plugin-node-kind.js";
import type { PeerConfigInput } from "./peer/peer-config.js";
import type { NodeBase, TaskHandler, WorkflowDefinition } from "./workflows/workflow-types.js";

/** Your agent's identity on the A2A cards (0.3 and 1.0) and the OpenWOP discovery document. */
export type { AgentIdentity };

/** A remote A2A agent `a2a.invoke` nodes call by name (`peer: <name>`): its card (or URL), pins and credentials. */
export type PeerOptions = PeerConfigInput;

/**
 * What `startHost` takes. Every field is the same setting as an environment variable (named on each field);
 * what is not given here falls back to that variable, exactly as the CLI reads it.
 */
export interface HostOptions {
  /** Task handlers by name, for the `task` nodes of your workflows (merged with those of HANDLERS_MODULE). */
  handlers?: Record<string, TaskHandler>;
  /** Workflow definitions given as objects; validated like files (`WorkflowDefinition<LlmNode>` for one using a kind of yours). */
  workflows?: WorkflowDefinition<NodeBase>[];
  /**
   * Node kinds of your own (docs/node-kinds.md), added to the built-in ones (with those of HANDLERS_MODULE's
   * `nodeKinds`). A built-in name, or a name given twice, stops the start.
   */
  nodeKinds?: readonly AnyNodeKind[];
  /** A folder of workflow definitions (YAML or JSON). WORKFLOWS_DIR. */
  workflowsDir?: string;
  /** Our built-in workflows to serve too: `demo`, `conformance`, or "none". BUILTIN_WORKFLOWS. */
  builtinWorkflows?: Array<"demo" | "conformance"> | "none";
  /** The skill a message without `metadata.skillId` runs. DEFAULT_SKILL. */
  defaultSkill?: string;
  /** AGENT_NAME, AGENT_DESCRIPTION, AGENT_VERSION, AGENT_PROVIDER_ORGANIZATION + AGENT_PROVIDER_URL, AGENT_DOCUMENTATION_URL, AGENT_ICON_URL. */
  agent?: AgentIdentity;
  /** Remote A2A agents by name, for `a2a.invoke` nodes (`peer: <name>`). A2A_PEERS (as JSON). */
  peers?: Record<string, PeerOptions>;
  /** PORT (0: any free port; `startHost` resolves to the one it got). */
  port?: number;
  /** HOST: the interface to listen on. */
  host?: string;
  /** PUBLIC_URL: the address callers use (on the agent card). */
  publicUrl?: string;
  /** MONGODB_URI; without it, the embedded default (see docs/configuration.md). */
  mongodbUri?: string;
  /** DATA_DIR: generated keys and the embedded database. */
  dataDir?: string;
  /** LOG_LEVEL. */
  logLevel?: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** Any other variable of docs/configuration.md, by name; these win over the process environment. */
  env?: Env;
}

type Scalar = string | number | boolean | undefined;

/** Each typed option and the variable it stands for. */
const OPTION_VARIABLES: Array<[path: string, variable: string, read: (o: HostOptions) => Scalar]> = [
  ["workflowsDir", "WORKFLOWS_DIR", (o) => o.workflowsDir],
  [
    "builtinWorkflows",
    "BUILTIN_WORKFLOWS",
    (o) =>
      Array.isArray(o.builtinWorkflows)
        ? o.builtinWorkflows.length
          ? o.builtinWorkflows.join(",")
          : "none"
        : o.builtinWorkflows,
  ],
  ["defaultSkill", "DEFAULT_SKILL", (o) => o.defaultSkill],
  ["agent.name", "AGENT_NAME", (o) => o.agent?.name],
  ["agent.description", "AGENT_DESCRIPTION", (o) => o.agent?.description],
  ["agent.version", "AGENT_VERSION", (o) => o.agent?.version],
  ["agent.provider.organization", "AGENT_PROVIDER_ORGANIZATION", (o) => o.agent?.provider?.organization],
  ["agent.provider.url", "AGENT_PROVIDER_URL", (o) => o.agent?.provider?.url],
  ["agent.documentationUrl", "AGENT_DOCUMENTATION_URL", (o) => o.agent?.documentationUrl],
  ["agent.iconUrl", "AGENT_ICON_URL", (o) => o.agent?.iconUrl],
  ["peers", "A2A_PEERS", (o) => (o.peers === undefined ? undefined : JSON.stringify(o.peers))],
  ["port", "PORT", (o) => o.port],
  ["host", "HOST", (o) => o.host],
  ["publicUrl", "PUBLIC_URL", (o) => o.publicUrl],
  ["mongodbUri", "MONGODB_URI", (o) => o.mongodbUri],
  ["dataDir", "DATA_DIR", (o) => o.dataDir],
  ["logLevel", "LOG_LEVEL", (o) => o.logLevel],
];

const KNOWN_KEYS: Record<string, readonly string[]> = {
  "": [
    "handlers",
    "workflows",
    "nodeKinds",
    "workflowsDir",
    "builtinWorkflows",
    "defaultSkill",
    "agent",
    "peers",
    "port",
    "host",
    "publicUrl",
    "mongodbUri",
    "dataDir",
    "logLevel",
    "env",
  ],
  agent: ["name", "description", "version", "provider", "documentationUrl", "iconUrl"],
  "agent.provider": ["organization", "url"],
};

export interface ResolvedOptions {
  /** The environment the configuration is read from: the process's, then `options.env`, then the typed options. */
  env: Env;
  /** Problems found in the options' shape (unknown keys, wrong types), reported with the configuration's. */
  problems: string[];
  /** Turns a configuration problem about a variable set by an option (or read from `<NAME>_FILE`) into one that says so. */
  explain(problem: string): string;
}

/** Options and environment are two spellings of one settings object: the options become variables. */
export function resolveHostOptions(options: HostOptions, processEnv: Env): ResolvedOptions {
  const problems: string[] = [];
  for (const [path, keys] of Object.entries(KNOWN_KEYS)) {
    const value =
      path === ""
        ? options
        : path.split(".").reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], options);
    if (value === undefined) continue;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      problems.push(`option ${path} must be an object`);
      continue;
    }
    for (const key of Object.keys(value))
      if (!keys.includes(key))
        problems.push(`unknown option ${path ? `${path}.` : ""}${key} (known: ${keys.join(", ")})`);
  }
  if (options.handlers !== undefined) {
    for (const [name, handler] of Object.entries(options.handlers))
      if (typeof handler !== "function") problems.push(`option handlers.${name} must be a function (a TaskHandler)`);
  }
  if (options.workflows !== undefined && !Array.isArray(options.workflows))
    problems.push("option workflows must be an array of workflow definitions");
  if (options.nodeKinds !== undefined && !Array.isArray(options.nodeKinds))
    problems.push("option nodeKinds must be an array of node kinds");

  // Each layer's `<NAME>_FILE` is read within the layer, so options.env (file or value) wins over the process's, as
  // every other variable does.
  const fromProcess = readSecretFiles(processEnv);
  const optionsEnv = typeof options.env === "object" && options.env !== null ? options.env : {};
  const fromOptions = readSecretFiles(optionsEnv);
  problems.push(...fromProcess.problems, ...fromOptions.problems);
  const env: Env = { ...fromProcess.env, ...fromOptions.env };
  const fromFile = new Map([...fromProcess.fromFile].filter(([name]) => optionsEnv[name] === undefined));
  for (const [name, fileVariable] of fromOptions.fromFile) fromFile.set(name, fileVariable);
  const fromOption = new Map<string, string>();
  for (const [path, variable, read] of OPTION_VARIABLES) {
    let value: Scalar;
    try {
      value = read(options);
    } catch {
      continue; // a wrong shape, reported above
    }
    if (value === undefined) continue;
    if (typeof value === "object") {
      problems.push(`option ${path} must be a ${path === "port" ? "number" : "string"}`);
      continue;
    }
    env[variable] = String(value);
    fromOption.set(variable, path);
    fromFile.delete(variable);
  }
  return {
    env,
    problems,
    explain(problem) {
      const variable = /^[A-Z][A-Z0-9_]*/.exec(problem)?.[0];
      if (!variable) return problem;
      const path = fromOption.get(variable);
      if (path) return `option ${path}: ${problem}`;
      const fileVariable = fromFile.get(variable);
      return fileVariable ? `${problem} (${variable} was read from the file ${fileVariable} names)` : problem;
    },
  };
}
