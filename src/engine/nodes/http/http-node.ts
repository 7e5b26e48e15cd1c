/**
 * The `http` node: the run's step is done by a service in any language (Python, Go, …) that answers one JSON
 * POST, the way Conductor's HTTP task plugs in workers. The request carries what a TypeScript TaskHandler sees
 * (input, params, earlier outputs, ids, the idempotency key); the answer is a HandlerResult (`{output?, artifacts?}`).
 *
 * Egress: the one outbound client (egress/egress-http-client.ts) with its own policy (HTTP_NODE_*), as push
 * deliveries and peer calls: https and public addresses, plus the private services HTTP_NODE_PRIVATE_HOSTS lists
 * (plain http allowed for exactly those), no redirects, a deadline per request, the answer capped. Retries: 5xx, 408/425/429, timeouts and network errors, under the one retry policy (domain/retry-policy.ts,
 * Retry-After honoured up to its cap); a 4xx fails the node at once.
 *
 * Secrets: `${NAME}` in the url and header values names a variable listed in WORKFLOW_VARIABLES; it is resolved
 * when the request is sent, so the definition (GET /v1/workflows/…) and the task record never hold the value.
 * Errors name the service's origin only (never its path, query or headers), and a service's error message is
 * truncated with every resolved variable value redacted.
 *
 * Durability: as a task node whose handler is not pure: node.started is a write of its own before the call, the
 * call runs at least once, and a re-run after a crash sends the same idempotency key (also the `Idempotency-Key`
 * header), so the service can deduplicate.
 */
import { CONNECTION_HEADERS } from "../../../domain/http-headers.js";
import type { Part } from "../../../domain/a2a-types.js";
import { decideRetry, retryAfterMs, type RetryPolicy } from "../../../domain/retry-policy.js";
import type { TaskContext } from "../../../machine/task-context.js";
import { EgressCallError, type EgressHttpClient } from "../../../egress/egress-http-client.js";
import { abortableSleep } from "../../../domain/abortable-sleep.js";
import { originOf as originOfUrl } from "../../../domain/url-origin.js";
import { opaqueFailure } from "../../handler-failure.js";
import { ShutdownSignal } from "../../in-flight-work.js";
import { idempotencyKeyOf, incomingMessageOf, runInputOf } from "../../workflow-walk.js";
import { feedbackFor } from "../gates/approval-node.js";
import {
  HandlerError,
  type HandlerResult,
  type HttpNode,
  type WorkflowDefinition,
} from "../../../workflows/workflow-types.js";
import { VARIABLE_REFERENCE } from "../../../workflows/workflow-variables.js";
import type { HttpNodeSettings } from "../node-egress-settings.js";
import { errorDetailOf, HTTP_NODE_ERRORS, parseHttpNodeAnswer } from "./http-node-answer.js";
import {
  failureMessage,
  stageNodeCompleted,
  stillRunning,
  type NodeExecutor,
  type NodeOutcome,
  type NodeRuntime,
} from "../node-executor.js";
import type { EngineNodeKind } from "../node-kind.js";

/** The kind, for the registry (node-registry.ts): checks at load, no stateless use, the executor. */
export const httpNodeKind: EngineNodeKind<HttpNode, HttpNodeRunner> = {
  check: (node, { variables }) => httpNodeProblem(node, variables),
  // Its client from the host's node egress (HTTP_NODE_*); an engine built without one fails its nodes.
  createServices: ({ egress, variables }) => ({
    services: egress
      ? new HttpNodeRunner(egress.client({ name: "http", accept: "application/json" }), egress.settings, variables)
      : new HttpNodeRunner(undefined, UNCONFIGURED),
  }),
  executor: (runtime, runner) => httpNodeExecutor(runtime, runner),
  view: {
    title: (node) => `http ${node.method ?? "POST"} ${originOfUrl(node.url)}`,
    // Its method and the service's host (never the path or query: they may hold secrets).
    label: (node) => `${node.method ?? "POST"} ${originOfUrl(node.url).replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")}`,
  },
};

/** A runner without a client: its nodes fail with `http_node_unavailable`. */
const UNCONFIGURED = { timeoutMs: 30_000, maxAttempts: 1, retryBaseMs: 1, retryMaxMs: 1 };

export { HTTP_NODE_ERRORS };

/** Headers the host owns: the connection, the body's framing and type, the idempotency key. Refused at load. */
const OWNED_HEADERS: ReadonlySet<string> = new Set([...CONNECTION_HEADERS, "content-type", "idempotency-key"]);

const VARIABLE = VARIABLE_REFERENCE;
const RETRYABLE_4XX: ReadonlySet<number> = new Set([408, 425, 429]);

// ---------------------------------------------------------------------------------------------
// Load time
// ---------------------------------------------------------------------------------------------

/**
 * What the schema cannot say about an `http` node (after it passed the schema): the url is an absolute http(s)
 * URL, `${NAME}` references name known variables, no header the host owns is set. Answers the problem, or
 * undefined. Variable values are used to check the url and are not kept.
 */
export function httpNodeProblem(
  node: HttpNode,
  variables: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const unknown = (text: string) =>
    [...text.matchAll(VARIABLE)].map((m) => m[1]!).find((name) => !Object.hasOwn(variables, name));
  // The fix first (the variable to list), then what is listed: the message alone says what to do.
  const notListed = (where: string, name: string) =>
    `node "${node.id}": ${where} refers to \${${name}}, which is not a variable workflows may use (add ${name} to WORKFLOW_VARIABLES; known: ${Object.keys(variables).join(", ") || "none"})`;
  const badUrlVariable = unknown(node.url);
  if (badUrlVariable) return notListed("url", badUrlVariable);
  const url = node.url.replace(VARIABLE, (_whole, name: string) => variables[name] ?? "unset-variable.invalid");
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    // Listed but not set: the url cannot be checked, and the variable is what to fix.
    const unset = [...node.url.matchAll(VARIABLE)].map((m) => m[1]!).filter((name) => variables[name] === undefined);
    if (unset.length > 0) {
      return `node "${node.id}": url refers to ${unset.map((n) => `\${${n}}`).join(", ")}, listed in WORKFLOW_VARIABLES but not set (set ${unset.join(", ")} in the environment; got "${node.url.slice(0, 120)}")`;
    }
    return `node "${node.id}": url must be an absolute http(s) URL (got "${node.url.slice(0, 120)}")`;
  }
  for (const [name, value] of Object.entries(node.headers ?? {})) {
    if (OWNED_HEADERS.has(name.toLowerCase()))
      return `node "${node.id}": header "${name}" is set by the host and may not be given`;
    const badHeaderVariable = unknown(value);
    if (badHeaderVariable) return notListed(`header "${name}"`, badHeaderVariable);
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The request and the answer
// ---------------------------------------------------------------------------------------------

/** The JSON body sent to the service: what a TaskHandler's context holds, minus the functions. */
export interface HttpNodeRequestBody {
  taskId: string;
  runId: string;
  contextId: string;
  workflowId: string;
  nodeId: string;
  attempt: number;
  idempotencyKey: string;
  /** The creating message: its text and merged data parts (as a handler's `input`), and all its parts. */
  input: { text: string; data: Record<string, unknown>; parts: Part[] };
  /** The caller's newest message (a reply after the first, or the first). */
  message?: { messageId: string; parts: Part[]; metadata?: Record<string, unknown> };
  params: Record<string, unknown>;
  /** Earlier nodes' outputs, by node id. */
  outputs: Readonly<Record<string, unknown>>;
  /** Refine feedback an approval gate sent back to this node, newest last. */
  feedback: string[];
}

export function httpNodeRequestBody(
  node: HttpNode,
  context: TaskContext,
  workflow: WorkflowDefinition,
): HttpNodeRequestBody {
  const incoming = incomingMessageOf(context);
  return {
    taskId: context.taskId,
    runId: context.taskId,
    contextId: context.contextId,
    workflowId: workflow.id,
    nodeId: node.id,
    attempt: context.attempt,
    idempotencyKey: idempotencyKeyOf(context, node.id),
    input: { ...runInputOf(context), parts: context.request.parts },
    ...(incoming
      ? {
          message: {
            messageId: incoming.messageId,
            parts: incoming.parts,
            ...(incoming.metadata ? { metadata: incoming.metadata } : {}),
          },
        }
      : {}),
    params: node.params ?? {},
    outputs: context.outputs,
    feedback: feedbackFor(context, workflow, node.id),
  };
}

// ---------------------------------------------------------------------------------------------
// The call
// ---------------------------------------------------------------------------------------------

/** A retryable failed attempt (RetryHint), with what to say if it was the last. */
interface FailedAttempt {
  retryable: true;
  retryAfterMs?: number;
  message: string;
}

/** Runs `http` nodes' calls: resolves variables, sends, retries, maps the answer. Without a client every node fails. */
export class HttpNodeRunner {
  constructor(
    private readonly client: Pick<EgressHttpClient, "request"> | undefined,
    private readonly settings: Pick<HttpNodeSettings, "timeoutMs" | "maxAttempts" | "retryBaseMs" | "retryMaxMs">,
    private readonly variables: Readonly<Record<string, string | undefined>> = {},
    private readonly clock: () => number = Date.now,
  ) {}

  /** One node execution: at most `retry.maxAttempts` requests. Throws HandlerError with an HTTP_NODE_ERRORS code. */
  async run(args: {
    node: HttpNode;
    context: TaskContext;
    workflow: WorkflowDefinition;
    signal: AbortSignal;
  }): Promise<HandlerResult> {
    const { node, context, workflow, signal } = args;
    if (!this.client)
      throw new HandlerError(HTTP_NODE_ERRORS.unavailable, "no HTTP client is configured for http nodes");
    const used: string[] = [];
    const resolve = (text: string, what: string) =>
      text.replace(VARIABLE, (_whole, name: string) => {
        const value = this.variables[name];
        if (value === undefined)
          throw new HandlerError(
            HTTP_NODE_ERRORS.variableUnset,
            `node "${node.id}": ${what} refers to \${${name}}, which is not set (WORKFLOW_VARIABLES lists it; set it in the environment)`,
          );
        used.push(value);
        return value;
      });
    const url = resolve(node.url, "url");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(node.headers ?? {})) headers[name] = resolve(value, `header "${name}"`);
    const idempotencyKey = idempotencyKeyOf(context, node.id);
    headers["idempotency-key"] = idempotencyKey;
    const body = JSON.stringify(httpNodeRequestBody(node, context, workflow));
    const where = originOf(url);
    const timeoutMs = node.timeoutMs ?? this.settings.timeoutMs;
    const policy: RetryPolicy = {
      baseMs: this.settings.retryBaseMs,
      maxMs: this.settings.retryMaxMs,
      maxAttempts: node.retry?.maxAttempts ?? this.settings.maxAttempts,
    };

    for (let attempt = 1; ; attempt++) {
      let failed: FailedAttempt;
      try {
        const response = await this.client.request({
          method: node.method ?? "POST",
          url,
          body,
          headers,
          timeoutMs,
          signal,
          returnErrorStatus: true,
        });
        if (response.status >= 200 && response.status < 300) return parseHttpNodeAnswer(response.body, where);
        const detail = errorDetailOf(response.body, used);
        const message = `${where} answered HTTP ${response.status}${detail ? `: ${detail}` : ""}`;
        if (response.status < 500 && !RETRYABLE_4XX.has(response.status))
          throw new HandlerError(HTTP_NODE_ERRORS.clientError, message);
        const after = retryAfterMs(response.retryAfter, this.clock());
        failed = { retryable: true, message, ...(after !== undefined ? { retryAfterMs: after } : {}) };
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (!(err instanceof EgressCallError)) throw err;
        if (err.kind === "egress") throw new HandlerError(HTTP_NODE_ERRORS.egressRefused, err.message);
        if (!err.retryable) throw new HandlerError(HTTP_NODE_ERRORS.badResponse, err.message);
        failed = { retryable: true, message: err.message };
      }
      const decision = decideRetry(policy, failed, attempt);
      if (!decision.retry)
        throw new HandlerError(
          HTTP_NODE_ERRORS.retriesExhausted,
          `gave up after ${attempt} attempt${attempt > 1 ? "s" : ""}: ${failed.message}`,
        );
      await abortableSleep(decision.delayMs, signal);
    }
  }
}

/** scheme://host[:port] of a URL, for messages (never the path or query); a placeholder if it does not parse. */
function originOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return "the service";
  }
}

// ---------------------------------------------------------------------------------------------
// The executor
// ---------------------------------------------------------------------------------------------

/**
 * `http` nodes: what came before is written first and node.started is a write of its own (the call acts outside
 * this host), then the call runs outside the lock (a cancel aborts it), then its result is staged.
 */
export function httpNodeExecutor(runtime: NodeRuntime, runner: HttpNodeRunner): NodeExecutor<HttpNode> {
  return {
    async step({ taskId, node, live, workflow, at }) {
      await runtime.repository.flush(taskId);
      const context = runtime.repository.stage(live, { type: "NODE_STARTED", at, nodeId: node.id }).context;
      return () => callService(runtime, runner, { taskId, node, context, workflow });
    },
  };
}

async function callService(
  runtime: NodeRuntime,
  runner: HttpNodeRunner,
  args: { taskId: string; node: HttpNode; context: TaskContext; workflow: WorkflowDefinition },
): Promise<NodeOutcome | void> {
  const { taskId, node, context, workflow } = args;
  const { repository, logger } = runtime;
  const ran = await runtime.inFlight.run(taskId, (abort) =>
    runner.run({ node, context, workflow, signal: abort.signal }),
  );
  if (ran.abort.aborted) {
    if (ran.abort.reason instanceof ShutdownSignal) throw ran.abort.reason;
    return; // cancelled: the driver's next step commits CANCELLED
  }
  let failure: { code: string; message: string } | undefined;
  if ("error" in ran) {
    const err = ran.error;
    if (err instanceof HandlerError) {
      failure = { code: err.code, message: err.message };
      logger.warn({ taskId, nodeId: node.id, code: failure.code, reason: failure.message }, "http node failed");
    } else {
      // Not one of ours: its text is internals, so callers get a correlation id and the log the error.
      const { code, message } = opaqueFailure(
        err,
        logger,
        { taskId, nodeId: node.id },
        `http node "${node.id}"`,
        "http_node_error",
      );
      failure = { code, message };
    }
  }
  return (live) => {
    if (!stillRunning(live, node.id)) return; // cancelled or paused meanwhile; dropped
    const at = runtime.now();
    if (failure) {
      const error = { ...failure, nodeId: node.id };
      repository.stage(live, { type: "FAIL", at, error, statusMessage: failureMessage(live.record, error.code) });
      return;
    }
    stageNodeCompleted(repository, live, workflow, node.id, at, ran.value);
  };
}
