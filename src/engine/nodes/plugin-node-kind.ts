import { randomUUID } from "node:crypto";
import { invalidParams } from "../../domain/errors.js";
import type { TaskContext } from "../../machine/task-context.js";
import { callerFailure } from "../handler-failure.js";
import { ShutdownSignal } from "../in-flight-work.js";
import { cursorOf } from "../message-route.js";
import { idempotencyKeyOf, incomingMessageOf, nodeAfter, runInputOf } from "../workflow-walk.js";
import { HandlerError, type HandlerResult, type NodeBase } from "../../workflows/workflow-types.js";
import { chunkEmitter } from "./artifact-chunks.js";
import { nodeHttpClient } from "./node-http-client.js";
import {
  failureMessage,
  localEffect,
  stageNodeCompleted,
  stillRunning,
  type NodeEffect,
  type NodeExecutor as EngineNodeExecutor,
  type NodeRuntime,
} from "./node-executor.js";
import type {
  EngineNodeKind,
  NodeHostDeps,
  NodeReplyReader as EngineReplyReader,
  NodeView as EngineNodeView,
} from "./node-kind.js";
import type {
  NodeEffectContext,
  NodeEffectHandle,
  NodeExecutor,
  NodeHost,
  NodeKind,
  NodeReplyReader,
  NodeRun,
  NodeRunView,
  NodeView,
} from "./public-node-kind.js";

/** A plugin kind, whatever its node type, services and payload. */
export type AnyNodeKind = NodeKind<NodeBase, unknown, unknown>;

/** A kind's name: what `kind:` says in a definition. */
const KIND_NAME = /^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/;

/** Deadlines and retries when the engine was built without the host's node egress (no calls can be made then anyway). */
const NO_EGRESS_SETTINGS = { timeoutMs: 30_000, maxAttempts: 1, retryBaseMs: 500, retryMaxMs: 10_000 };

/**
 * Plugin kinds as engine kinds, by name, with every problem of the list: not a kind, a bad or built-in name, a name
 * given twice, a schema whose `kind` const is not the name. `where` names the list in problems
 * ("option nodeKinds", "HANDLERS_MODULE …").
 */
export function pluginNodeKinds(
  kinds: readonly unknown[],
  builtin: readonly string[],
  where: string,
): { table: Record<string, EngineNodeKind<NodeBase, unknown, unknown>>; problems: string[] } {
  const table: Record<string, EngineNodeKind<NodeBase, unknown, unknown>> = {};
  const problems: string[] = [];
  kinds.forEach((candidate, index) => {
    const problem = kindProblem(candidate, builtin, table);
    if (problem) problems.push(`${where}[${index}]: ${problem}`);
    else {
      const kind = candidate as AnyNodeKind;
      table[kind.kind] = engineNodeKindOf(kind);
    }
  });
  return { table, problems };
}

function kindProblem(
  candidate: unknown,
  builtin: readonly string[],
  seen: Record<string, unknown>,
): string | undefined {
  if (typeof candidate !== "object" || candidate === null)
    return "not a node kind (expected an object with kind, schema and executor)";
  const { kind, schema, executor } = candidate as Partial<AnyNodeKind>;
  if (typeof kind !== "string" || !KIND_NAME.test(kind))
    return `kind must be a name like "llm" or "acme.search" (lower-case letters and digits, parts joined by ".", "-" or "_"); got ${JSON.stringify(kind)}`;
  if (builtin.includes(kind)) return `node kind "${kind}" is built in; give yours another name`;
  if (Object.hasOwn(seen, kind)) return `node kind "${kind}" is given twice`;
  if (typeof executor !== "function")
    return `node kind "${kind}": executor must be a function (services) => ({ step })`;
  const constKind = (schema as { properties?: { kind?: { const?: unknown } } } | undefined)?.properties?.kind?.const;
  if (typeof schema !== "object" || schema === null)
    return `node kind "${kind}": schema must be the JSON Schema of its nodes`;
  if (constKind !== kind) return `node kind "${kind}": schema.properties.kind must be { "const": "${kind}" }`;
  return undefined;
}

/** One plugin kind as the engine runs it: its verbs staged as machine events, its effects run by the driver. */
export function engineNodeKindOf(kind: AnyNodeKind): EngineNodeKind<NodeBase, unknown, unknown> {
  const { check, decide, reply, routes, view } = kind;
  return {
    schema: kind.schema,
    ...(check ? { check: (node, context) => check.call(kind, node, context) } : {}),
    ...(decide
      ? {
          decide(node, context) {
            const decision = decide.call(kind, node, runViewOf(context));
            return decision.type === "fail"
              ? { type: "fail", error: { ...decision.error, nodeId: node.id } }
              : decision;
          },
        }
      : {}),
    ...(reply ? { reply: replyReaderOf(reply) } : {}),
    createServices: (deps) => kind.createServices?.(nodeHostOf(kind.kind, deps)) ?? { services: undefined },
    ...(routes ? { routes: (services) => routes.call(kind, services) } : {}),
    executor: (runtime, services) => executorOf(kind.kind, kind.executor(services), runtime),
    ...(view ? { view: viewOf(view) } : {}),
  };
}

/** The run as a plugin kind sees it. */
export function runViewOf(context: TaskContext): NodeRunView {
  const { interrupt } = context;
  return {
    taskId: context.taskId,
    contextId: context.contextId,
    workflowId: context.workflowId,
    cursor: context.cursor,
    nodeStarted: context.nodeStarted,
    attempt: context.attempt,
    input: runInputOf(context),
    message: incomingMessageOf(context) ?? context.request,
    outputs: context.outputs,
    ...(interrupt
      ? {
          interrupt: {
            nodeId: interrupt.nodeId,
            requestedAt: interrupt.requestedAt,
            ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
            data: interrupt.data,
          },
        }
      : {}),
    idempotencyKey: (nodeId) => idempotencyKeyOf(context, nodeId),
  };
}

function nodeHostOf(kind: string, deps: NodeHostDeps): NodeHost {
  const { egress } = deps;
  const httpSettings = egress?.settings ?? NO_EGRESS_SETTINGS;
  return {
    kind,
    logger: deps.logger.child({ nodeKind: kind }),
    clock: deps.clock,
    variables: deps.variables,
    httpSettings: {
      timeoutMs: httpSettings.timeoutMs,
      maxAttempts: httpSettings.maxAttempts,
      retryBaseMs: httpSettings.retryBaseMs,
      retryMaxMs: httpSettings.retryMaxMs,
    },
    httpClient: (options = {}) =>
      nodeHttpClient(egress?.client({ name: kind, ...options }), kind, httpSettings.timeoutMs),
  };
}

/** Effects `run.effect` made, by the handle the kind's step answers. */
type EffectHandles = WeakMap<NodeEffectHandle, NodeEffect>;

function executorOf(
  name: string,
  executor: NodeExecutor<NodeBase, unknown>,
  runtime: NodeRuntime,
): EngineNodeExecutor<NodeBase, unknown> {
  const effects: EffectHandles = new WeakMap();
  return {
    async step({ taskId, node, step, live, workflow, at }) {
      const { repository } = runtime;
      let started = false;
      let moved = false;
      const begin = () => {
        repository.stage(live, { type: "NODE_STARTED", at, nodeId: node.id });
        started = moved = true;
      };
      const start = async (options: { local?: boolean } = {}) => {
        if (started) return;
        // Work acting outside this host may not run before its node.started is stored.
        if (!options.local) await repository.flush(taskId);
        begin();
      };
      const context = () => live.actor.getSnapshot().context;
      const run: NodeRun<unknown> = {
        ...runViewOf(context()),
        payload: step.payload,
        at,
        start,
        complete(result, options) {
          if (!started) begin();
          stageNodeCompleted(
            repository,
            live,
            workflow,
            node.id,
            at,
            result,
            nextOf(options?.next, () => nodeAfter(workflow, node.id)),
          );
          moved = true;
        },
        fail(code, message) {
          const error = { code, message, nodeId: node.id };
          repository.stage(live, { type: "FAIL", at, error, statusMessage: failureMessage(live.record, code) });
          moved = true;
        },
        ask({ text, data = {} }) {
          const interruptId = randomUUID();
          const { contextId } = live.record;
          repository.stage(live, {
            type: "INTERRUPT",
            at,
            interrupt: { interruptId, nodeId: node.id, kind: "clarification", data, requestedAt: at, exchanges: [] },
            statusMessage: {
              messageId: randomUUID(),
              role: "agent",
              taskId,
              contextId,
              parts: [
                { kind: "text", text },
                { kind: "data", data: { interrupt: { kind: "clarification", nodeId: node.id, interruptId, ...data } } },
              ],
            },
          });
          moved = true;
        },
        async effect(work, options = {}) {
          await start(options);
          const effect = effectOf(
            name,
            runtime,
            { taskId, node, idempotencyKey: idempotencyKeyOf(context(), node.id), workflow },
            work,
          );
          const handle = Object.freeze({}) as NodeEffectHandle;
          effects.set(handle, options.local ? localEffect(effect) : effect);
          return handle;
        },
      };
      const answer = await executor.step(node, run);
      if (answer) {
        const effect = effects.get(answer);
        if (!effect) throw new Error(`node kind "${name}": step answered something run.effect did not make`);
        return effect;
      }
      // Nothing staged: nothing to do until the task is kicked again.
      return moved;
    },
    ...(executor.onCancelled
      ? {
          onCancelled: ({ node, context }) => {
            const view = runViewOf(context);
            return async () => void (await executor.onCancelled?.(node, view));
          },
        }
      : {}),
  };
}

/** `next` as the engine's cursor: a node id, `$end` (null) or null; undefined: the default. */
function nextOf(next: string | null | undefined, otherwise: () => string | null): string | null {
  if (next === undefined) return otherwise();
  return next === null ? null : cursorOf(next);
}

/** A plugin's work, run outside the lock; what it comes to is staged under the lock if the node still runs. */
function effectOf(
  name: string,
  runtime: NodeRuntime,
  args: { taskId: string; node: NodeBase; idempotencyKey: string; workflow: Parameters<typeof nodeAfter>[0] },
  work: (context: NodeEffectContext) => Promise<HandlerResult | void>,
): NodeEffect {
  const { taskId, node, idempotencyKey, workflow } = args;
  return async () => {
    const logger = runtime.logger.child({ taskId, nodeId: node.id, nodeKind: name });
    const ran = await runtime.inFlight.run(taskId, (abort) =>
      work({
        taskId,
        nodeId: node.id,
        idempotencyKey,
        // Made when the work reads it: much work never does.
        get signal() {
          return abort.signal;
        },
        logger,
        emitArtifactChunk: chunkEmitter(runtime, taskId, node.id),
      }),
    );
    if (ran.abort.aborted) {
      if (ran.abort.reason instanceof ShutdownSignal) throw ran.abort.reason;
      return; // cancelled: the driver's next step commits CANCELLED
    }
    const failure =
      "error" in ran
        ? callerFailure(ran.error, logger, { taskId, nodeId: node.id }, `${name} node "${node.id}"`, "node_error")
        : undefined;
    return (live) => {
      if (!stillRunning(live, node.id)) return; // cancelled or paused meanwhile; dropped
      const at = runtime.now();
      if (failure) {
        const error = { code: failure.code, message: failure.message, nodeId: node.id };
        runtime.repository.stage(live, {
          type: "FAIL",
          at,
          error,
          statusMessage: failureMessage(live.record, error.code),
        });
        return;
      }
      stageNodeCompleted(runtime.repository, live, workflow, node.id, at, ran.value ?? undefined);
    };
  };
}

function replyReaderOf(reader: NodeReplyReader<NodeBase>): EngineReplyReader<NodeBase> {
  // A reply the kind refuses (a HandlerError) is the caller's mistake: invalid params with the kind's words.
  const refusing = <T>(read: () => T): T => {
    try {
      return read();
    } catch (err) {
      if (err instanceof HandlerError) throw invalidParams(err.message);
      throw err;
    }
  };
  const { fromText } = reader;
  return {
    ...(reader.byNodeId ? { byNodeId: true } : {}),
    interpret: ({ node, workflow, context, resumeValue, decision }) => {
      const outcome = refusing(() => reader.interpret({ node, run: runViewOf(context), resumeValue, decision }));
      return { type: "resume", output: outcome.output, next: nextOf(outcome.next, () => nodeAfter(workflow, node.id)) };
    },
    ...(fromText ? { fromText: (text, node) => refusing(() => fromText.call(reader, text, node)) } : {}),
  };
}

function viewOf(view: NodeView<NodeBase>): EngineNodeView<NodeBase> {
  const { waitingFor, ...rest } = view;
  return {
    ...rest,
    ...(waitingFor
      ? { waitingFor: (node, context, status) => waitingFor.call(view, node, runViewOf(context), status) }
      : {}),
  };
}
