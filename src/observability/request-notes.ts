import { AsyncLocalStorage } from "node:async_hooks";

/** What the layers below learn about an inbound call, for its access line, span and metrics. */
export interface RequestNotes {
  /** RPC or JSON-RPC method, or `<HTTP method> <route template>`. */
  method?: string;
  /** A2A protocol version when the binding decides it from the body (JSON-RPC method names). */
  version?: string;
  taskId?: string;
  /** The A2A contextId of that task (`gen_ai.conversation.id` of an invoke_agent span). */
  contextId?: string;
  tenant?: string;
  /** The call sends the agent a message (an A2A send or stream, any binding): an `invoke_agent` span under the GenAI opt-in. */
  invokesAgent?: boolean;
  /** The call's `A2A-Version` decision. */
  a2aNegotiation?: A2ANegotiationNote;
}

/** What a binding learned of one inbound call's `A2A-Version`: what it named (if anything) and what was served. */
export interface A2ANegotiationNote {
  requested?: string;
  /** Null: refused (a version this host does not serve). */
  negotiated: string | null;
}

const current = new AsyncLocalStorage<RequestNotes>();

/** Runs `work` with a fresh notes object for the call. */
export function withRequestNotes<T>(notes: RequestNotes, work: () => T): T {
  return current.run(notes, work);
}

/**
 * Adds what is known about the current inbound call. Outside a call (start-up, timers) it does nothing.
 * The first task id and tenant win: a call is about the task it names first.
 */
export function noteRequest(fields: RequestNotes): void {
  const notes = current.getStore();
  if (!notes) return;
  if (fields.method !== undefined) notes.method = fields.method;
  if (fields.version !== undefined) notes.version = fields.version;
  if (fields.taskId !== undefined) notes.taskId ??= fields.taskId;
  // The context of the task named first: a call's conversation is its task's.
  if (fields.contextId !== undefined && (fields.taskId === undefined || fields.taskId === notes.taskId))
    notes.contextId ??= fields.contextId;
  if (fields.invokesAgent) notes.invokesAgent = true;
  if (fields.a2aNegotiation) notes.a2aNegotiation = fields.a2aNegotiation;
  if (fields.tenant) notes.tenant ??= fields.tenant;
}
