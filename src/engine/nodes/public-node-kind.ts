/**
 * The node-kind plugin API: what a kind written outside this package implements (`startHost({ nodeKinds })`, or a
 * HANDLERS_MODULE's `nodeKinds` export), exported from index.ts under a semver promise. It is deliberately smaller
 * than the engine's own contract (node-kind.ts, which the built-in kinds use): a kind sees its node, a read-only
 * view of the run and a few verbs (start, complete, fail, ask, effect); the task machine, its events and the task's
 * lock stay inside (plugin-node-kind.ts turns one of these into an engine kind).
 */
import type { Message } from "../../domain/a2a-types.js";
import type { ArtifactChunk, HandlerResult, NodeBase } from "../../workflows/workflow-types.js";
import type { NodeCheckContext, NodeGraphEdge, NodeRoute, NodeWaiting } from "./node-kind.js";

export type { NodeBase };

/**
 * One kind of workflow node, from outside the package. `N` is its node type (`kind` a string literal, the kind's
 * name), `S` its services (what `createServices` builds, handed to `executor` and `routes`), `P` the payload of its
 * `run` decisions (what `decide` tells the executor).
 *
 * ```ts
 * interface LlmNode { kind: "llm"; id: string; title?: string; prompt: string }
 * const llm: NodeKind<LlmNode, NodeHttpClient> = {
 *   kind: "llm",
 *   schema: { type: "object", required: ["kind", "id", "prompt"], properties: { kind: { const: "llm" }, id: { type: "string" }, prompt: { type: "string" } } },
 *   createServices: (host) => ({ services: host.httpClient() }),
 *   executor: (http) => ({ step: (node, run) => run.effect(async ({ signal }) => ({ output: await ask(http, node.prompt, signal) })) }),
 * };
 * ```
 */
export interface NodeKind<N extends NodeBase, S = undefined, P = undefined> {
  /** The kind's name: what `kind:` says in a definition. A built-in name, or one given twice, stops the start. */
  readonly kind: N["kind"];
  /** The JSON Schema of its nodes (`properties.kind` a `const` of its name); definitions are validated with it. */
  readonly schema: NodeSchemaFragment;
  /** What the schema cannot say, checked when a definition is loaded: the problem (naming the node), or undefined. */
  check?(node: N, context: NodeCheckContext): string | undefined;
  /** What a running task at one of its nodes does next (pure; default `{ type: "run" }`: the executor decides). */
  decide?(node: N, run: NodeRunView): NodeDecision<P>;
  /** Its services, built once when the host starts, from the host's pieces (an egress-guarded HTTP client, variables). */
  createServices?(host: NodeHost): NodeServiceParts<S>;
  /** HTTP routes it serves (a callback receiver), from its services. */
  routes?(services: S): NodeRoute[];
  /** Its executor, from its services (undefined without createServices). */
  executor(services: S): NodeExecutor<N, P>;
  /** How it reads a reply to a question it asked (`run.ask`); without one its nodes accept no replies. */
  reply?: NodeReplyReader<N>;
  /** How the console shows its nodes. */
  view?: NodeView<N>;
}

/** A kind's schema fragment: a JSON Schema object whose `kind` is a const; `#/$defs/Id` and `#/$defs/Title` may be referenced. */
export interface NodeSchemaFragment {
  type: "object";
  required: readonly string[];
  properties: { kind: { const: string }; [property: string]: unknown };
  additionalProperties?: boolean;
  [keyword: string]: unknown;
}

/**
 * What a task at one of the kind's nodes does next: `complete` ends the run (successfully), `fail` fails it,
 * `wait` does nothing now (the task rests, its actor stopped, until something else moves it: a reply, a cancel,
 * an operator's action; the kind is asked again then), and `run` hands the node to the executor with `payload`.
 */
export type NodeDecision<P = undefined> =
  | { type: "complete" }
  | { type: "run"; payload?: P }
  | { type: "wait" }
  | { type: "fail"; error: { code: string; message: string } };

/** The run as a kind sees it: read-only, as committed (or staged, under the lock). */
export interface NodeRunView {
  readonly taskId: string;
  readonly contextId: string;
  readonly workflowId: string;
  /** The node the run is at; null after the last one. */
  readonly cursor: string | null;
  /** Whether the node at the cursor has started (its node.started is stored). */
  readonly nodeStarted: boolean;
  /** Which execution of this visit of the node this is: 1, or more after a crash. */
  readonly attempt: number;
  /** The creating message's text parts (joined) and data parts (merged), as a handler's `input`. */
  readonly input: { text: string; data: Record<string, unknown> };
  /** The caller's newest message (the creating one, or a reply). */
  readonly message: Message;
  /** Earlier nodes' outputs, by node id. */
  readonly outputs: Readonly<Record<string, unknown>>;
  /** The question the run waits on, if any. */
  readonly interrupt?: {
    nodeId: string;
    requestedAt: string;
    expiresAt?: string;
    data: Readonly<Record<string, unknown>>;
  };
  /** The same for every execution of one visit of `nodeId` (a crash and re-run keeps it): send it with external effects. */
  idempotencyKey(nodeId: string): string;
}

/** How a kind runs its nodes. */
export interface NodeExecutor<N extends NodeBase, P = undefined> {
  /**
   * Under the task's lock: what the node does now, through `run`'s verbs. Answer `run.effect(...)` for work that
   * takes time or reaches outside (it runs after the lock is released), or nothing: the run goes on if a verb
   * moved it, else it waits until it is kicked again.
   */
  step(node: N, run: NodeRun<P>): Promise<NodeStepResult> | NodeStepResult;
  /** The run was cancelled at this node (committed): work to undo elsewhere, best effort. */
  onCancelled?(node: N, run: NodeRunView): Promise<void> | undefined;
}

/** What `step` answers: an effect (from `run.effect`) or nothing. */
export type NodeStepResult = NodeEffectHandle | void;

/** An effect to run outside the lock; only `run.effect` makes one. */
export interface NodeEffectHandle {
  readonly effect: unique symbol;
}

/** The run under the task's lock, with the verbs that move it. Each verb is committed with what follows it. */
export interface NodeRun<P = undefined> extends NodeRunView {
  /** The payload of the `run` decision (`decide`), if any. */
  readonly payload: P | undefined;
  /** The step's time (ISO 8601). */
  readonly at: string;
  /**
   * Starts the node (its node.started). Work acting outside this host must not run before it is stored, so unless
   * `local` (the node acts on nothing outside this host) what came before is written first.
   */
  start(options?: { local?: boolean }): Promise<void>;
  /** Completes the node with its result (artifacts without an id get `<nodeId>.<index>`); the run goes to `next` (default: the node after). */
  complete(result?: HandlerResult, options?: { next?: string | null }): void;
  /** Fails the run at this node. */
  fail(code: string, message: string): void;
  /**
   * Asks the caller (the task goes to input-required): `text` is the status message, `data` travels with it. The
   * kind's `reply` reads the answer.
   */
  ask(question: { text: string; data?: Record<string, unknown> }): void;
  /**
   * Starts the node (as `start`) and answers work to run after the lock is released, so a cancel can commit
   * meanwhile. What it resolves to completes the node; a HandlerError fails the run with its code; anything else
   * fails it with a correlation id (the error is logged). Runs at least once: after a crash it runs again.
   */
  effect(
    work: (context: NodeEffectContext) => Promise<HandlerResult | void>,
    options?: { local?: boolean },
  ): Promise<NodeEffectHandle>;
}

/** What an effect sees while it runs outside the lock. */
export interface NodeEffectContext {
  readonly taskId: string;
  readonly nodeId: string;
  /** The same for every execution of this visit of the node: send it with external effects. */
  readonly idempotencyKey: string;
  /** Aborted when the run is cancelled or the host shuts down. */
  readonly signal: AbortSignal;
  readonly logger: NodeLogger;
  /** Streams a piece of an artifact: committed (and seen by streams and tasks/get) before it resolves; rejects once the node no longer runs. */
  emitArtifactChunk(chunk: ArtifactChunk): Promise<void>;
}

/** How a kind reads a reply to the question it asked. */
export interface NodeReplyReader<N extends NodeBase> {
  /** What the reply does: the node's output and where the run goes. A reply it cannot take: throw a HandlerError (the caller gets invalid params with its message). */
  interpret(args: {
    node: N;
    run: NodeRunView;
    resumeValue: Record<string, unknown>;
    decision: { decidedBy: string; decidedAt: string };
  }): NodeReplyOutcome;
  /** The resume value of a text-only reply; without it the reply needs a data part. */
  fromText?(text: string, node: N): Record<string, unknown>;
  /** Its questions may be answered by node id (POST /v1/runs/{runId}/interrupts/{nodeId}). */
  byNodeId?: boolean;
}

/** A reply's effect: the node's output, and the next node (default: the node after; null ends the run). */
export interface NodeReplyOutcome {
  output: Record<string, unknown>;
  next?: string | null;
}

/** How the console shows a kind's nodes. */
export interface NodeView<N extends NodeBase> {
  /** Its label when the definition sets no title (default: the node id). */
  title?(node: N): string;
  /** The graph's sub-label (default: the kind). */
  label?(node: N): string;
  /** A node that calls another agent: the agent (scheme, host and port only). */
  remote?(node: N): { agent: string; skillId?: string } | undefined;
  /** Its outgoing edges (default: one `next` edge to `after`). */
  edges?(node: N, around: { after: string; before: string | undefined }): NodeGraphEdge[];
  /** Whom a task at this node waits for; undefined: the console's default. */
  waitingFor?(node: N, run: NodeRunView, status: string): NodeWaiting | undefined;
}

/** What a kind's `createServices` answers: its services, and what to close when the host stops. */
export interface NodeServiceParts<S> {
  services: S;
  close?(): Promise<void>;
}

/** The host's pieces a kind builds its services from. */
export interface NodeHost {
  /** The kind's name, as registered. */
  readonly kind: string;
  readonly logger: NodeLogger;
  clock(): Date;
  /** The variables definitions may reference as `${NAME}` (WORKFLOW_VARIABLES, A2A_PEER_CARD_URL): value, or undefined when not set. */
  readonly variables: Readonly<Record<string, string | undefined>>;
  /** Deadlines and retries the operator set for node calls (HTTP_NODE_TIMEOUT_MS, _MAX_ATTEMPTS, _RETRY_BASE_MS, _RETRY_MAX_MS). */
  readonly httpSettings: { timeoutMs: number; maxAttempts: number; retryBaseMs: number; retryMaxMs: number };
  /**
   * An HTTP client through the host's egress guard with the node policy (HTTP_NODE_*: https and public addresses,
   * the private services HTTP_NODE_PRIVATE_HOSTS lists; loopback only under the test-only
   * HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS). Refusals name the kind. Closed by the host when it stops.
   */
  httpClient(options?: { accept?: string }): NodeHttpClient;
}

/** Outbound HTTP for a kind. Failures are HandlerErrors: `egress_refused` (the guard said no; its message names the setting), `http_call_failed` (retryable when the network or the deadline failed). */
export interface NodeHttpClient {
  /** One request; the whole answer (any status), capped at HTTP_NODE_MAX_RESPONSE_BYTES. */
  request(request: NodeHttpRequest): Promise<NodeHttpResponse>;
  /** A request whose answer is read as it comes (SSE, chunked JSON lines): `timeoutMs` bounds the wait for the headers only. */
  stream(request: NodeHttpRequest): Promise<NodeHttpStream>;
}

export interface NodeHttpRequest {
  method: "GET" | "POST" | "PUT" | "PATCH";
  url: string;
  body?: string;
  headers?: Record<string, string>;
  /** Default: HTTP_NODE_TIMEOUT_MS. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface NodeHttpResponse {
  status: number;
  contentType: string;
  body: string;
}

export interface NodeHttpStream {
  status: number;
  contentType: string;
  /** The body's text as it arrives, until the server ends it. */
  text: AsyncIterable<string>;
}

/** The host's logger (JSON lines): fields first, then the message. */
export interface NodeLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

export type { NodeCheckContext, NodeGraphEdge, NodeRoute, NodeWaiting };
export type { NodeRouteAnswer, NodeRouteRequest } from "./node-kind.js";
