import { noteRequest } from "../observability/request-notes.js";
import type { Telemetry } from "../observability/telemetry.js";

/** What an invoking operation is given first: the caller's message (its contextId, when it names one). */
interface InvokingParams {
  message: { contextId?: string };
}

/**
 * Under the GenAI opt-in, notes each call of `methods` (the operations that send the agent a message) as an agent
 * invocation: its server span becomes `invoke_agent` (request-observer.ts), with the message's contextId when it names
 * one, and the task and conversation of the answer. Wrapped at the one version-neutral service every binding reaches
 * (app.ts names its operations), so no wire's method names are listed in observability. Without the opt-in the service
 * is returned as it is.
 */
export function observedInvocations<S extends object>(
  service: S,
  telemetry: Telemetry,
  methods: ReadonlyArray<keyof S & string>,
): S {
  if (!telemetry.genAi) return service;
  const invoking: ReadonlySet<PropertyKey> = new Set(methods);
  return new Proxy(service, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (!invoking.has(property)) return method;
      return (params: InvokingParams, ...rest: unknown[]) => {
        const contextId = params.message.contextId;
        noteRequest({ invokesAgent: true, ...(contextId ? { contextId } : {}) });
        const answer = method(params, ...rest);
        // The answer names the task and conversation for sure (the store notes only the writes it sees in this call: a
        // repeat of a message writes nothing); a stream's first event is read by the binding, its task noted by the store.
        return answer instanceof Promise ? answer.then((value: unknown) => (noteAnswer(value), value)) : answer;
      };
    },
  });
}

/** The task (or stateless message) a send answered: a `Task`, or `{ kind: "task", task }` / `{ kind: "message", message }`. */
function noteAnswer(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  const answer = value as {
    id?: unknown;
    contextId?: unknown;
    task?: { id?: unknown; contextId?: unknown };
    message?: { contextId?: unknown };
  };
  const task = answer.task ?? (typeof answer.id === "string" ? answer : undefined);
  if (task && typeof task.id === "string" && typeof task.contextId === "string")
    noteRequest({ taskId: task.id, contextId: task.contextId });
  else if (typeof answer.message?.contextId === "string") noteRequest({ contextId: answer.message.contextId });
}
