import { randomUUID } from "node:crypto";
import { expect } from "vitest";

/** A task as the A2A 0.3 JSON-RPC binding answers it. */
export type WireTask = Record<string, any>;

type RpcBody = { result?: WireTask; error?: { code: number; message: string } };

export interface JsonRpcCallerOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** Whether `start` sends blocking unless told otherwise (default true). */
  blocking?: boolean;
  /** How long `waitFor` waits by default (10 s unless said). */
  waitMs?: number;
}

/**
 * A caller of a host's A2A 0.3 JSON-RPC binding for integration tests: start a skill, reply, get, cancel, and
 * poll until a task reaches a state. Every call must answer HTTP 200 with a result; anything else throws.
 */
export function jsonRpcCaller(baseUrl: () => string, options: JsonRpcCallerOptions = {}) {
  const rpc = async (method: string, params: unknown): Promise<WireTask> => {
    const res = await fetch(`${baseUrl()}/a2a/jsonrpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as RpcBody;
    if (!body.result) throw new Error(`JSON-RPC error: ${JSON.stringify(body.error)}`);
    return body.result;
  };
  const get = (id: string): Promise<WireTask> => rpc("tasks/get", { id });
  return {
    start: (
      text: string,
      skillId: string,
      more: { blocking?: boolean; data?: Record<string, unknown> } = {},
    ): Promise<WireTask> =>
      rpc("message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text }, ...(more.data ? [{ kind: "data", data: more.data }] : [])],
          metadata: { skillId },
        },
        configuration: { blocking: more.blocking ?? options.blocking ?? true },
      }),
    /** Answers a task that waits for input: a text, or the parts given. */
    reply: (task: WireTask, parts: string | unknown[]): Promise<WireTask> =>
      rpc("message/send", {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          taskId: task["id"],
          contextId: task["contextId"],
          parts: typeof parts === "string" ? [{ kind: "text", text: parts }] : parts,
        },
      }),
    get,
    cancel: (id: string): Promise<WireTask> => rpc("tasks/cancel", { id }),
    /** Polls tasks/get until `done` holds. */
    async waitFor(
      id: string,
      done: (task: WireTask) => boolean,
      what = "the expected state",
      timeoutMs = options.waitMs ?? 10_000,
    ): Promise<WireTask> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const task = await get(id);
        if (done(task)) return task;
        if (Date.now() > until)
          throw new Error(
            `task ${id} did not reach ${what}; it is ${JSON.stringify(task["status"])} ${JSON.stringify(task["metadata"])}`,
          );
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}
