import type { Logger } from "../../observability/logger.js";
import type { PendingInterrupt, TaskContext } from "../../machine/task-context.js";
import type { TaskReadPort } from "../../store/task-read-port.js";
import type { CommitBus } from "../../store/commit-bus.js";
import type { Message } from "../../domain/a2a-types.js";
import type { PeerInvokeSeam } from "../../domain/peer-invoke-seam.js";
import type { ConversationReads } from "../handler-conversation.js";
import type {
  ArtifactChunk,
  HandlerResult,
  NodeBase,
  TaskHandler,
  WorkflowDefinition,
  WorkflowNode,
} from "../../workflows/workflow-types.js";
import type { ReplyOutcome, Step } from "../workflow-walk.js";
import type { EgressHttpClient } from "../../egress/egress-http-client.js";
import type { A2APeerClient } from "../../peer/a2a-peer-client.js";
import type { PeerCallbackKey } from "../../peer/peer-callbacks.js";
import type { PeerConfig } from "../../peer/peer-config.js";
import type { PeerJwks } from "../../peer/peer-jwks.js";
import type { A2AInvokeSettings } from "../../peer/peer-settings.js";
import type { PeerVersions } from "../../peer/peer-version.js";
import type { NodeExecutor, NodeProgressPort, NodeRuntime } from "./node-executor.js";

export type { NodeBase };

/**
 * One kind of workflow node as the engine runs it: everything about the kind is in one folder (or module), and the
 * registry (node-registry.ts) lists every kind, one line each. The loader, the engine, the supervisor, the host's
 * routes and the console read the registry and never name a kind. The built-in kinds are written to this contract
 * (their executors stage machine events under the task's lock); a kind from outside src is written to the public
 * one (public-node-kind.ts), which plugin-node-kind.ts turns into this. `N` is the kind's node type, `S` its
 * services (what its createServices builds), `P` the payload of its `run` decisions.
 */
export interface EngineNodeKind<N extends NodeBase = WorkflowNode, S = unknown, P = unknown> {
  /** The schema of its nodes (`kind` a const), for a kind the published schema does not hold; the validator adds it. */
  schema?: Record<string, unknown>;
  /** How a stateless skill (`stateless: true`: runs at once, stores nothing) runs it; without it such skills may not hold the kind. */
  stateless?: StatelessNodeRunner<N>;
  /** Checks that need no valid definition (run even when the schema fails, so one run shows them too): the problem, or undefined. */
  precheck?(node: Readonly<Record<string, unknown>>, context: NodeCheckContext): string | undefined;
  /**
   * Before the schema: the node with its `${NAME}` references expanded (`node`, stored) and the form the schema
   * sees (`forValidation`); problems (naming the node) go to `problems`. Undefined: the node as written.
   */
  expand?(
    node: Readonly<Record<string, unknown>>,
    context: NodeExpandContext,
    problems: string[],
  ): { node: unknown; forValidation: unknown } | undefined;
  /** What the schema cannot say, checked when a definition is loaded: the problem (it names the node), or undefined. */
  check?(node: N, context: NodeCheckContext): string | undefined;
  /** What a running task at this node does next (pure). Default `{ type: "run" }`: the executor decides. */
  decide?(node: N, context: TaskContext): Step<P>;
  /** How the node reads a reply to the interrupt it raised; a kind without one accepts no replies. */
  reply?: NodeReplyReader<N>;
  /** Its services, built once from the host's generic pieces (core.ts hands every kind the same NodeHostDeps). */
  createServices?(deps: NodeHostDeps): NodeServiceParts<S>;
  /** HTTP routes the kind serves (e.g. a2a.invoke's peer callback receiver), from its services. */
  routes?(services: S): NodeRoute[];
  /** The conformance seams (CONFORMANCE_SEAMS) the kind serves the host, from its services (e.g. a2a.invoke's invoke seam). */
  seams?(services: S): NodeSeams;
  /** Builds the kind's executor from what the host provides and its own services (undefined without createServices). */
  executor(runtime: NodeRuntime, services: S): NodeExecutor<N, P>;
  /** How the console shows it. */
  view?: NodeView<N>;
}

/** One node of a stateless skill, run at once in this process (engine/stateless-skill.ts drives the loop). */
export interface StatelessNodeRunner<N extends NodeBase> {
  /** Where the run goes next and what the node produced, or why the skill fails. */
  run(
    node: N,
    run: StatelessRun,
  ): Promise<{ next: string | null; result?: HandlerResult } | { failure: { code: string; message: string } }>;
}

/** What a stateless node sees: the message (nothing is stored), the run so far, the host's handlers. */
export interface StatelessRun {
  workflow: WorkflowDefinition;
  message: Message;
  runId: string;
  tenant: string;
  contextId: string;
  input: { text: string; data: Record<string, unknown> };
  outputs: Record<string, unknown>;
  signal: AbortSignal;
  handlers: Readonly<Record<string, TaskHandler>>;
  reads: ConversationReads;
  logger: Logger;
  emitArtifactChunk(chunk: ArtifactChunk): Promise<void>;
}

/** What load-time checks see. */
export interface NodeCheckContext {
  handlers: Readonly<Record<string, TaskHandler>>;
  /** The variables definitions may reference as `${NAME}` (WORKFLOW_VARIABLES and A2A_PEER_CARD_URL): value, or undefined when not set. */
  variables: Readonly<Record<string, string | undefined>>;
  /** The named peers an `a2a.invoke` node may call (A2A_PEERS). */
  peers: readonly string[];
}

/** What `expand` sees: the configured variables (only those: the names every definition may use are in `known`) and the named peers. */
export interface NodeExpandContext {
  variables: Readonly<Record<string, string | undefined>>;
  /** Names any definition may reference, configured or not. */
  known: readonly string[];
  /** The named peers: name → card URL (or url). */
  peers: Readonly<Record<string, string>>;
}

/** A reply to a node's interrupt, read by its kind. */
export interface NodeReplyReader<N extends NodeBase> {
  /** What the resume value does to the run; a value it cannot take is refused (invalidParams) with a clear message. */
  interpret(args: {
    node: N;
    workflow: WorkflowDefinition;
    context: TaskContext;
    interrupt: PendingInterrupt;
    resumeValue: Record<string, unknown>;
    decision: { decidedBy: string; decidedAt: string };
  }): ReplyOutcome;
  /** Its interrupts may be resolved by node id (POST /v1/runs/{runId}/interrupts/{nodeId}); else only by a reply message or token. */
  byNodeId?: boolean;
  /** The resume value of a text-only reply message; none: the reply needs a data part. */
  fromText?(text: string, node: N, interrupt: PendingInterrupt): Record<string, unknown>;
}

/**
 * What the host hands every kind to build its services from: generic pieces, the same for every kind (core.ts
 * names no kind). A kind takes the ones it needs.
 */
export interface NodeHostDeps {
  logger: Logger;
  clock: () => Date;
  /** Committed tasks, for readers (a receiver reading the task a push names). */
  reads: Pick<TaskReadPort, "find" | "contextOf">;
  /** Commits a node's progress under the task's lock (the supervisor's `commitNodeProgress`). */
  progress: NodeProgressPort;
  /** Commits as they happen: this instance's and other instances' (store/commit-bus.ts). */
  commits: CommitBus;
  /** The task handlers (startHost's, HANDLERS_MODULE's and the built-in ones), by name. */
  handlers: Readonly<Record<string, TaskHandler>>;
  /** The variables definitions may reference as `${NAME}` (A2A_PEER_CARD_URL and WORKFLOW_VARIABLES): value, or undefined when not set. */
  variables: Readonly<Record<string, string | undefined>>;
  /** Other A2A agents: the outbound A2A client and what goes with it (A2A_PEER_*, A2A_PEERS). Absent in engines built without one. */
  peers?: NodePeerPieces;
  /** Outbound HTTP from nodes (HTTP_NODE_*): the policy's settings and a client factory. Absent in engines built without one. */
  egress?: NodeEgress;
}

/** The outbound A2A client and what goes with it, as core.ts builds them. */
export interface NodePeerPieces {
  /** The outbound A2A client (every binding and version). */
  client: A2APeerClient;
  settings: A2AInvokeSettings & { peers: ReadonlyMap<string, PeerConfig> };
  /** The client half of each A2A version: a pushed body is read with the one whose shape it has. */
  versions: PeerVersions;
  /** Peers' key sets (their `jwksUrl`), fetched through the egress client: signed pushes are checked against them. */
  jwks: PeerJwks;
  /** The per-visit callback token key: with it this host receives peers' pushes. */
  callbackKey?: PeerCallbackKey;
  /** Where peers push to (offered only when https, or plain http under the test-only loopback allowance). */
  callbackBaseUrl?: string;
}

/**
 * Outbound HTTP from nodes: every client comes from `client` and goes through the egress guard with the HTTP_NODE_*
 * policy (https and public addresses, the private services HTTP_NODE_PRIVATE_HOSTS lists, loopback only under the
 * test-only allowance), is traced, and is closed by the host when it stops.
 */
export interface NodeEgress {
  /** Deadlines, retries and the answer cap of node calls (HTTP_NODE_*). */
  settings: {
    timeoutMs: number;
    maxAttempts: number;
    retryBaseMs: number;
    retryMaxMs: number;
    maxResponseBytes: number;
  };
  /** A client for one kind: `name` names it in refusals ("<name> node URL refused by …") and in traces. */
  client(options: { name: string; accept?: string }): EgressHttpClient;
}

/** What a kind's `createServices` answers: its services, and what to close when the host stops. */
export interface NodeServiceParts<S> {
  services: S;
  close?(): Promise<void>;
}

/** The host's conformance seams a kind may implement; the registry gathers them, app.ts mounts their routes. */
export interface NodeSeams {
  /** `POST /v1/host/sample/a2a/invoke`: the kind that calls peers, driven against the suite's peer. */
  invokePeer?: PeerInvokeSeam;
}

/** One HTTP route of a kind. The transport layer mounts it (transport/rest/node-kind-routes.ts). */
export interface NodeRoute {
  method: "POST" | "GET";
  /** With `{name}` path parameters. */
  path: string;
  /** True: no API key (the route checks its own credential, e.g. a per-task token). */
  public: boolean;
  handle(request: NodeRouteRequest): Promise<NodeRouteAnswer>;
}

export interface NodeRouteRequest {
  params: Readonly<Record<string, string>>;
  /** Lower-case names. */
  headers: Readonly<Record<string, string | undefined>>;
  /** The raw body, as received. */
  body: string;
}

export interface NodeRouteAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Whom or what a waiting task waits for, as the console shows it. */
export interface NodeWaiting {
  kind: "approver" | "clarification" | "peer" | "timer" | "external";
  label: string;
  nodeId: string;
  since?: string;
  until?: string;
}

/** One edge of the console's graph from this node. */
export interface NodeGraphEdge {
  from: string;
  to: string;
  kind: "next" | "case" | "default" | "accept" | "refine" | "reject";
  condition?: string;
}

/** How the console shows a kind's nodes. */
export interface NodeView<N extends NodeBase> {
  /** Its label when the definition sets no title (default: the node id). */
  title?(node: N): string;
  /** The graph's sub-label (default: the kind, and the id when a title is set). */
  label?(node: N): string;
  /** A node that calls another agent: the agent (scheme, host and port only). */
  remote?(node: N): { agent: string; skillId?: string } | undefined;
  /** Its outgoing edges (default: one `next` edge to `after`). `before`: the node before it. */
  edges?(node: N, around: { after: string; before: string | undefined }): NodeGraphEdge[];
  /** Whom a task at this node waits for, from its pending interrupt or its running state; undefined: the console's default. */
  waitingFor?(node: N, context: TaskContext, status: string): NodeWaiting | undefined;
}
