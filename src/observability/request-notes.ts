import { AsyncLocalStorage } from "node:async_hooks";

/** What the layers below learn about an inbound call, for its access line, span and metrics. */
export interface RequestNotes {
  /** RPC or JSON-RPC method, or `<HTTP method> <route template>`. */
  method?: string;
  /** A2A protocol version when the binding decides it from the body (JSON-RPC method names). */
  version?: string;
  taskId?: string;
  tenant?: string;
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
  if (fields.tenant) notes.tenant ??= fields.tenant;
}
