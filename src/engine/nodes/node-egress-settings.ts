import { EnvReader, type Env } from "../../domain/env-settings.js";
import { privateServiceEntryProblem } from "../../peer/peer-http-client.js";
import type { A2APeerSettings } from "../../peer/peer-settings.js";

/** The egress guard's policy (egress/egress-guard.ts), as the peer layer passes it on. */
type EgressPolicy = A2APeerSettings["egress"];

/**
 * How nodes call out over HTTP (HTTP_NODE_*, docs/configuration.md): the `http` kind's calls and every plugin kind's
 * (NodeHost.httpClient), through the egress guard with this policy; and WORKFLOW_VARIABLES, the `${NAME}` values
 * definitions may reference. The variables keep their `HTTP_NODE_` names: the `http` kind was their first user.
 */
export interface HttpNodeSettings {
  /** Deadline of each request, for a node without `timeoutMs`. */
  timeoutMs: number;
  /** Attempts per node execution (5xx, 429, 408, timeouts, network errors), for a node without `retry`. */
  maxAttempts: number;
  /** Backoff before retry n is retryBaseMs · 2^(n-1), capped at retryMaxMs, with jitter; a longer Retry-After wins up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Largest answer read; a longer one fails the node (`http_bad_response`). */
  maxResponseBytes: number;
  /** The egress guard's policy: https and public addresses, and the private services HTTP_NODE_PRIVATE_HOSTS lists. */
  egress: EgressPolicy;
  /**
   * `WORKFLOW_VARIABLES`: the environment variables a definition may reference as `${NAME}` (an `http` node's url
   * and header values, an `a2a.invoke` node's agentCardUrl).
   */
  variableNames: readonly string[];
  /** Their values (`undefined`: listed but not set). A function, so the values never print with the settings (JSON, inspect, logs). */
  variableValues(): Readonly<Record<string, string | undefined>>;
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Reads the HTTP_NODE_* variables and WORKFLOW_VARIABLES, reporting every problem to `env`. */
export function readHttpNodeSettings(env: EnvReader, production: boolean): HttpNodeSettings {
  const allowLoopback = env.bool("HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS", false);
  if (allowLoopback && production)
    env.problem("HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production");
  const retryBaseMs = env.int("HTTP_NODE_RETRY_BASE_MS", 500, 1, 600_000);
  const retryMaxMs = env.int("HTTP_NODE_RETRY_MAX_MS", 10_000, 1, 3_600_000);
  if (retryMaxMs < retryBaseMs) env.problem("HTTP_NODE_RETRY_MAX_MS must not be smaller than HTTP_NODE_RETRY_BASE_MS");
  const variables: Record<string, string | undefined> = {};
  for (const name of env.list("WORKFLOW_VARIABLES")) {
    if (!VARIABLE_NAME.test(name)) {
      env.problem(
        `WORKFLOW_VARIABLES must be a comma-separated list of environment variable names (got "${name.slice(0, 64)}")`,
      );
      continue;
    }
    const value = env.raw(name);
    variables[name] = value;
  }
  return {
    timeoutMs: env.int("HTTP_NODE_TIMEOUT_MS", 30_000, 1, 3_600_000),
    maxAttempts: env.int("HTTP_NODE_MAX_ATTEMPTS", 3, 1, 10),
    retryBaseMs,
    retryMaxMs,
    maxResponseBytes: env.int("HTTP_NODE_MAX_RESPONSE_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    // https and public addresses, plus the private services the operator lists (host:port, cidr:port), which may
    // be plain http; http:// and loopback in general only under the test-only allowance.
    egress: {
      allowHttpLoopback: allowLoopback,
      allowedPorts: env.ports("HTTP_NODE_ALLOWED_PORTS"),
      allowHosts: env.list("HTTP_NODE_ALLOW_HOSTS"),
      denyHosts: env.list("HTTP_NODE_DENY_HOSTS"),
      privateHosts: readPrivateHosts(env),
      settings: {
        allowedPorts: "HTTP_NODE_ALLOWED_PORTS",
        allowHosts: "HTTP_NODE_ALLOW_HOSTS",
        denyHosts: "HTTP_NODE_DENY_HOSTS",
        privateHosts: "HTTP_NODE_PRIVATE_HOSTS",
      },
    },
    variableNames: Object.keys(variables),
    variableValues: () => ({ ...variables }),
  };
}

/** HTTP_NODE_PRIVATE_HOSTS, each entry checked now so a bad one stops the start (the guard compiles them per call). */
function readPrivateHosts(env: EnvReader): string[] {
  const entries = env.list("HTTP_NODE_PRIVATE_HOSTS");
  for (const entry of entries) {
    const problem = privateServiceEntryProblem(entry);
    if (problem !== undefined) env.problem(`HTTP_NODE_PRIVATE_HOSTS: ${problem}`);
  }
  return entries;
}

/** `readHttpNodeSettings` on its own: the settings, or every problem as one message. */
export function loadHttpNodeSettings(env: Env, production: boolean): HttpNodeSettings | string {
  const reader = new EnvReader(env);
  const settings = readHttpNodeSettings(reader, production);
  return reader.problems.length > 0 ? reader.problems.join("; ") : settings;
}

/** The configured values of WORKFLOW_VARIABLES, revealed for the workflow loader and the http node runner. */
export function workflowVariableValues(settings: HttpNodeSettings): Readonly<Record<string, string | undefined>> {
  return settings.variableValues();
}
