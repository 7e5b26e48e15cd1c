import { noteRequest } from "../observability/request-notes.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { TaskService } from "../a2a/task-service.js";
import type { SendParams } from "../a2a/message-admission.js";

/** The TaskService operations that send the agent a message, whichever binding and A2A version the call came in by. */
const INVOCATIONS: ReadonlySet<PropertyKey> = new Set(["send", "sendMessage", "streamMessage"]);

/**
 * Under the GenAI opt-in, notes each call that sends the agent a message as an agent invocation (its server span becomes
 * `invoke_agent`; request-observer.ts), with the message's contextId when it names one (a new conversation's is noted
 * when its task is stored). Read here, at the one version-neutral door every binding reaches, so no wire's method names
 * are listed in observability. Without the opt-in the service is returned as it is.
 */
export function observedTaskService(service: TaskService, telemetry: Telemetry): TaskService {
  if (!telemetry.genAi) return service;
  return new Proxy(service, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (!INVOCATIONS.has(property)) return method;
      return (params: SendParams, ...rest: unknown[]) => {
        const contextId = params.message.contextId;
        noteRequest({ invokesAgent: true, ...(contextId ? { contextId } : {}) });
        const answer = method(params, ...rest);
        // The answer names the task and conversation for sure (the store's notes may come from a write another call
        // made, or none at all for a repeat); a stream's first event is read by the binding, its task noted by the store.
        return answer instanceof Promise ? answer.then((value: unknown) => (noteAnswer(value), value)) : answer;
      };
    },
  });
}

/** The task (or stateless message) a send answered: `Task`, or `{ kind: "task", task }` / `{ kind: "message", message }`. */
function noteAnswer(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  const answer = value as { id?: unknown; contextId?: unknown; task?: { id?: unknown; contextId?: unknown }; message?: { contextId?: unknown } };
  const task = answer.task ?? (typeof answer.id === "string" ? answer : undefined);
  if (task && typeof task.id === "string" && typeof task.contextId === "string") noteRequest({ taskId: task.id, contextId: task.contextId });
  else if (typeof answer.message?.contextId === "string") noteRequest({ contextId: answer.message.contextId });
}
