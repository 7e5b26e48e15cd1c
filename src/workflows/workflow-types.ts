import type { Artifact, Message, Part } from "../domain/a2a-types.js";
import type { A2ATaskStateValue } from "../domain/run-status.js";

/** Declarative workflow definitions (schemas/workflow.schema.json). */

/** What every node of every kind has, a plugin kind's too: its kind's name and its id (and, optionally, a title). */
export interface NodeBase {
  kind: string;
  id: string;
  title?: string;
}

export interface TaskNode {
  kind: "task";
  id: string;
  title?: string;
  handler: string;
  params?: Record<string, unknown>;
  retry?: { maxAttempts: number };
  /** Where the run goes after this node: a node id, or `$end` (ends a `switch` branch); the next node by default. */
  next?: string;
}

export interface ApprovalNode {
  kind: "approval";
  id: string;
  title: string;
  description?: string;
  /**
   * Whose artifacts are put up for approval (edit-accept edits the first): a node, a list of nodes (each that ran,
   * in order), or `$taken` (every node that produced artifacts on the path this run actually took).
   */
  artifactFrom?: ArtifactSource;
  actions?: Array<"accept" | "reject" | "refine" | "edit" | "ask">;
  timeoutMs?: number;
  onReject?: "fail" | { goto: string };
  onRefine?: { goto: string };
}

/** `$taken`: the artifacts of every node that ran before the gate on this run's path. */
export const TAKEN_PATH = "$taken";

export type ArtifactSource = string | string[];

export interface ClarificationNode {
  kind: "clarification";
  id: string;
  title?: string;
  questions: Array<{ id: string; question: string; required?: boolean }>;
  timeoutMs?: number;
}

export interface DelayNode {
  kind: "delay";
  id: string;
  title?: string;
  durationMs: number;
}

/** Calls an external A2A agent (the host as an A2A client) and projects the peer's task into the run. */
export interface A2AInvokeNode {
  kind: "a2a.invoke";
  id: string;
  title?: string;
  /**
   * The peer's agent card. May be `${VARIABLE}` (e.g. `${A2A_PEER_CARD_URL}`), expanded from configuration
   * when the workflow is loaded; a variable that is not configured stays unexpanded and the node fails with
   * `external_call_failed` when it runs. A node naming a `peer` leaves it out: the loader fills in the peer's
   * card URL (or, for a peer without a card, its url), for display.
   */
  agentCardUrl: string;
  /**
   * A named peer (A2A_PEERS / A2A_PEERS_FILE / `startHost({ peers })`): its card, pinned binding or version, and
   * credentials come from configuration. A name that is not configured stops the start. Instead of agentCardUrl.
   */
  peer?: string;
  /** Sent to the peer as `message.metadata.skillId`. */
  skillId?: string;
  /** Text sent to the peer; without it the run's input (text and data parts) is forwarded. */
  message?: string;
  /** How long the peer may take to reach a terminal or input state after each message we send. */
  timeoutMs?: number;
}

/**
 * What a `switch` case tests on the incoming message; every field given must hold. `metadata` and `data`
 * map dotted paths (into `message.metadata`, or the merged data parts) to the value they must equal.
 */
export interface SwitchCondition {
  messageIdPrefix?: string;
  /** Case-insensitive substring of the message's text parts. */
  textContains?: string;
  /** A regular expression (JavaScript syntax, case-insensitive) tested on the message's text parts. */
  textMatches?: string;
  metadata?: Record<string, unknown>;
  data?: Record<string, unknown>;
  /**
   * What earlier nodes produced: `"<nodeId>.<dotted.path>"` (or just `"<nodeId>"`) → the value the node's output
   * must equal there, or a test such as `{ $gt: 1000 }`. A node that has not run has no output: only
   * `{ $exists: false }` and `{ $ne: … }` hold then.
   */
  output?: Record<string, OutputExpectation>;
}

/** A test on one value of a node's output; every operator given must hold. */
export interface OutputTest {
  $eq?: unknown;
  /** Holds when the value differs or is absent. */
  $ne?: unknown;
  /** Numbers compare with numbers, strings with strings; any other pair does not hold. */
  $gt?: number | string;
  $gte?: number | string;
  $lt?: number | string;
  $lte?: number | string;
  /** true: the value is there (null counts); false: it is not, or the node has not run. */
  $exists?: boolean;
}

/** What one `output` entry expects: a JSON value to equal, or (an object whose keys all start with `$`) a test. */
export type OutputExpectation = OutputTest | string | number | boolean | null | unknown[] | Record<string, unknown>;

/** Routes on the incoming message and earlier outputs: the first matching case's `goto`, else `default`, else the next node. */
export interface SwitchNode {
  kind: "switch";
  id: string;
  title?: string;
  cases: Array<{ when: SwitchCondition; goto: string }>;
  default?: string;
}

/** Calls a service over HTTP with the run's state and takes its answer as the node's result. */
export interface HttpNode {
  kind: "http";
  id: string;
  title?: string;
  /** Absolute http(s) URL; may hold `${NAME}` references to WORKFLOW_VARIABLES, resolved when the request is sent. */
  url: string;
  /** POST by default. */
  method?: "POST" | "PUT" | "PATCH";
  /** Extra request headers; values may hold `${NAME}` references (credentials). */
  headers?: Record<string, string>;
  /** Static parameters sent to the service as `params`. */
  params?: Record<string, unknown>;
  /** Deadline of each request (HTTP_NODE_TIMEOUT_MS by default). */
  timeoutMs?: number;
  /** Attempts of the call, the first included (HTTP_NODE_MAX_ATTEMPTS by default). */
  retry?: { maxAttempts: number };
  /** Where the run goes after this node: a node id, or `$end`; the next node by default. */
  next?: string;
}

/** A `goto`/`next` target that ends the run. */
export const END_TARGET = "$end";

/**
 * Every node type by kind: the types users write definitions in, so each kind's type is here (its executor,
 * load checks and schema fragment are in its module under engine/nodes/).
 */
export interface WorkflowNodeTypes {
  task: TaskNode;
  approval: ApprovalNode;
  clarification: ClarificationNode;
  delay: DelayNode;
  "a2a.invoke": A2AInvokeNode;
  switch: SwitchNode;
  http: HttpNode;
}

export type WorkflowNode = WorkflowNodeTypes[keyof WorkflowNodeTypes];

/** A definition; `N`: the node types of plugin kinds it uses, beside the built-in ones (`WorkflowDefinition<LlmNode>`). */
export interface WorkflowDefinition<N extends NodeBase = never> {
  id: string;
  name: string;
  description: string;
  version?: string;
  tags?: string[];
  examples?: string[];
  inputModes?: string[];
  outputModes?: string[];
  /**
   * The skill answers `message/send` with a Message instead of a Task: it runs its task and switch nodes at
   * once, stores nothing and creates no task (A2A "Message or Task").
   */
  stateless?: boolean;
  nodes: Array<WorkflowNode | N>;
}

/** What a task handler sees. Node execution is at-least-once: use `idempotencyKey` for external effects. */
export interface HandlerContext {
  taskId: string;
  runId: string;
  nodeId: string;
  /** Stable per (run, node, visit): the same after a crash-and-retry of this execution. */
  idempotencyKey: string;
  attempt: number;
  params: Record<string, unknown>;
  /** The first message's text parts (joined) and data parts (merged). File parts are in `message.parts`. */
  input: { text: string; data: Record<string, unknown> };
  /**
   * The incoming message, whole: every part (text, file by bytes or by URI, data) with its metadata, and
   * the message's own metadata, messageId, role and referenceTaskIds. For the task's first run it is the
   * message that created the task; after an interrupt, the caller's newest reply (the message a `switch`
   * routes on). A copy: changing it changes nothing stored.
   */
  message: Message;
  /** The A2A contextId of the task (for a stateless skill: of the message, or the one its answer gets). */
  contextId: string;
  /**
   * The tasks `message.referenceTaskIds` names (the first 10 distinct ids; MAX_REFERENCED_TASKS), in
   * that order, as committed now. Only tasks of the caller's tenant: an unknown id, another tenant's task or
   * an expired one is simply absent. Read from the store on each call (the same after a restart).
   */
  referencedTasks(): Promise<ConversationTask[]>;
  /**
   * The tenant's earlier tasks in this contextId, newest first (by last update, as ListTasks orders them):
   * tasks created before this one, this task left out; at most `limit` (default 10, at most 50).
   */
  contextTasks(options?: { limit?: number }): Promise<ConversationTask[]>;
  outputs: Readonly<Record<string, unknown>>;
  /** Refine feedback addressed to this node by an approval gate, newest last. */
  feedback: string[];
  signal: AbortSignal;
  /**
   * Streams a piece of an artifact: committed (and shown to streams, tasks/get) before it resolves. Rejects
   * when the run no longer runs this node. A stateless skill gathers the chunks into its answer.
   */
  emitArtifactChunk(chunk: ArtifactChunk): Promise<void>;
}

/** Another task of the conversation as a handler sees it: read-only, as last committed. */
export interface ConversationTask {
  readonly id: string;
  readonly contextId: string;
  /** The A2A task state in its stored (A2A 0.3) form: "completed", "input-required", "failed", ... */
  readonly state: A2ATaskStateValue;
  /** Its artifacts (a copy). */
  readonly artifacts: readonly Artifact[];
}

export interface HandlerArtifact {
  artifactId?: string;
  name: string;
  description?: string;
  parts: Part[];
}

/** One piece of an artifact a handler streams: the first (`append` false) starts it, later ones add parts. */
export interface ArtifactChunk {
  artifactId: string;
  name?: string;
  parts: Part[];
  append: boolean;
  lastChunk: boolean;
}

export interface HandlerResult {
  output?: unknown;
  artifacts?: HandlerArtifact[];
}

export interface TaskHandler {
  (ctx: HandlerContext): Promise<HandlerResult>;
  /**
   * True when the handler has no effect outside this host (it computes its result from its context alone).
   * Its node.started is then written together with the transitions before it; any other handler gets a
   * store write of its own for node.started before it runs. For a blocking send's new task, a pure handler
   * may even run before the task's first write (BLOCKING_FIRST_WRITE_MS), so the task is stored once, at
   * its end; a crash before that write leaves nothing, and the caller's retry runs it again.
   */
  pure?: boolean;
}

/** A handler failure with a stable code recorded on the failed run. */
export class HandlerError extends Error {
  override readonly name = "HandlerError";
  constructor(
    readonly code: string,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}
