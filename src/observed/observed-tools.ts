import { SpanStatusCode, type Attributes } from "@opentelemetry/api";
import type { NodeServicesByKind } from "../engine/nodes/node-registry.js";
import type { A2AInvokeServices } from "../engine/nodes/a2a-invoke/a2a-invoke-node.js";
import type { InvokeRun } from "../engine/nodes/a2a-invoke/a2a-invoke-runner.js";
import type { HttpNodeRunner } from "../engine/nodes/http/http-node.js";
import { idempotencyKeyOf } from "../engine/workflow-walk.js";
import { errorTypeOf, executeToolSpanName } from "../observability/gen-ai-conventions.js";
import { inSpan } from "../observability/spans.js";
import type { Telemetry } from "../observability/telemetry.js";
import type { TaskHandler } from "../workflows/workflow-types.js";
import { withPeerAgent } from "./observed-peer-client.js";

/**
 * `gen_ai.tool.type` (gen-ai-spans.md): a handler is the user's function, called with the node's parameters; an `http`
 * node and an `a2a.invoke` node are calls the agent makes to the world outside it, the conventions' "extension".
 */
type ToolType = "function" | "extension";

/** What an execute_tool span says of one node execution: no argument, input or result (those are content). */
interface ToolCall {
  tool: string;
  type: ToolType;
  /** The node's idempotency key: stable per run, node and visit, so a re-run after a crash is the same call. */
  callId: string;
  taskId: string;
  nodeId: string;
  nodeKind: string;
  attempt: number;
}

function toolAttributes(call: ToolCall): Attributes {
  return {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": call.tool,
    "gen_ai.tool.type": call.type,
    "gen_ai.tool.call.id": call.callId,
    "a2a.task.id": call.taskId,
    "openwop.node.id": call.nodeId,
    "openwop.node.type": call.nodeKind,
    "openwop.node.attempt": call.attempt,
  };
}

/** Runs `work` in an `execute_tool {tool}` span (INTERNAL); a throw, or a failure `failedAs` reads off the answer, sets error.type. */
function inToolSpan<T>(
  telemetry: Telemetry,
  call: ToolCall,
  work: () => Promise<T>,
  failedAs?: (answer: T) => string | undefined,
): Promise<T> {
  return inSpan(telemetry.tracer, executeToolSpanName(call.tool), toolAttributes(call), async (span) => {
    try {
      const answer = await work();
      const failure = failedAs?.(answer);
      if (failure !== undefined) {
        span?.setAttribute("error.type", failure);
        span?.setStatus({ code: SpanStatusCode.ERROR, message: failure });
      }
      return answer;
    } catch (err) {
      span?.setAttribute("error.type", errorTypeOf(err));
      throw err;
    }
  });
}

/** Under the GenAI opt-in, each handler run as `execute_tool {handler}` (tool type function); the call id is its idempotency key. */
export function handlersAsTools(
  handlers: Record<string, TaskHandler>,
  telemetry: Telemetry,
): Record<string, TaskHandler> {
  return Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => {
      const observed: TaskHandler = (ctx) =>
        inToolSpan(
          telemetry,
          {
            tool: name,
            type: "function",
            callId: ctx.idempotencyKey,
            taskId: ctx.taskId,
            nodeId: ctx.nodeId,
            nodeKind: "task",
            attempt: ctx.attempt,
          },
          () => handler(ctx),
        );
      // What the engine reads off a handler (`pure`) stays readable on the wrapper.
      return [name, Object.assign(observed, handler)];
    }),
  );
}

/**
 * Under the GenAI opt-in, the node kinds' runners that act outside the host, each execution in an `execute_tool {node id}`
 * span (tool type extension): the `http` node's call and the `a2a.invoke` node's whole conversation with its peer (card,
 * send, waiting, a forwarded reply), so the peer call's invoke_agent CLIENT span is its child. Without the opt-in, or
 * when tracing is off, the services are returned as they are.
 */
export function nodeServicesAsTools<P extends { services: NodeServicesByKind }>(parts: P, telemetry: Telemetry): P {
  if (!telemetry.tracer || !telemetry.genAi) return parts;
  // The two kinds whose runners call out, by their registry names: the one place telemetry needs to know them.
  const invoke = parts.services["a2a.invoke"] as A2AInvokeServices | undefined;
  const httpRunner = parts.services["http"] as HttpNodeRunner | undefined;
  const services: Record<string, unknown> = { ...parts.services };
  if (invoke) {
    const { peerInvoker } = invoke;
    services["a2a.invoke"] = {
      ...invoke,
      peerInvoker: withRun(peerInvoker, (r: InvokeRun) => {
        const call = {
          tool: r.node.id,
          type: "extension" as const,
          callId: idempotencyKeyOf(r.context, r.node.id),
          taskId: r.taskId,
          nodeId: r.node.id,
          nodeKind: r.node.kind,
          attempt: r.context.attempt,
        };
        const agent = { cardUrl: r.node.agentCardUrl, ...(r.node.peer !== undefined ? { name: r.node.peer } : {}) };
        return inToolSpan(
          telemetry,
          call,
          () => withPeerAgent(agent, () => peerInvoker.run(r)),
          (outcome) => (outcome.type === "fail" ? outcome.error.code : undefined),
        );
      }),
    };
  }
  if (httpRunner) {
    services["http"] = withRun(httpRunner, (args: Parameters<HttpNodeRunner["run"]>[0]) => {
      const call = {
        tool: args.node.id,
        type: "extension" as const,
        callId: idempotencyKeyOf(args.context, args.node.id),
        taskId: args.context.taskId,
        nodeId: args.node.id,
        nodeKind: args.node.kind,
        attempt: args.context.attempt,
      };
      return inToolSpan(telemetry, call, () => httpRunner.run(args));
    });
  }
  return { ...parts, services };
}

/** `target` with its `run` replaced: everything else (its other methods, `news` of the peer invoker) read from it as before. */
function withRun<T extends { run: unknown }>(target: T, run: T["run"]): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      if (property === "run") return run;
      const value: unknown = Reflect.get(object, property, receiver);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });
}
