// Issue 12 items 20 and 21 without a server: what a switch case matches on the incoming message, how a
// definition with a switch is validated, where the run goes next, and the stateless runner's answer.
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/domain/a2a-types.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";
import { conditionHolds, switchTarget } from "../../src/engine/message-route.js";
import { StatelessSkills } from "../../src/engine/stateless-skill.js";
import type { ConversationReads } from "../../src/engine/handler-conversation.js";
import { taskNotFound } from "../../src/domain/errors.js";
import { checkWorkflow, WorkflowLoadError } from "../../src/engine/workflow-catalog.js";
import { incomingMessageOf, nodeAfter } from "../../src/engine/workflow-engine.js";
import { applyTaskEvent, createTaskActor } from "../../src/machine/task-actor.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import { RECENT_HISTORY } from "../../src/machine/task-machine.js";
import type { SwitchNode, WorkflowDefinition } from "../../src/workflows/workflow-types.js";
import { createLogger } from "../../src/observability/logger.js";

const message = (over: Partial<Message> = {}): Message => ({
  messageId: "m-1",
  role: "user",
  parts: [
    { kind: "text", text: "Please REFUND order 42" },
    { kind: "data", data: { order: { id: 42, priority: "high" }, tags: ["a"] } },
  ],
  metadata: { channel: "email", nested: { level: 2 } },
  ...over,
});

/** A switch's input with only the message (no node has run). */
const only = (m: Message) => ({ message: m, outputs: {}, nodeIds: [] });

describe("switch conditions on the incoming message", () => {
  it("messageId prefix, text (contains, case-insensitive; regex), metadata and data values by dotted path; all fields must hold", () => {
    const m = message({ messageId: "urgent-7" });
    expect(conditionHolds({ messageIdPrefix: "urgent-" }, only(m))).toBe(true);
    expect(conditionHolds({ messageIdPrefix: "normal-" }, only(m))).toBe(false);
    expect(conditionHolds({ textContains: "refund" }, only(m))).toBe(true);
    expect(conditionHolds({ textContains: "cancel" }, only(m))).toBe(false);
    expect(conditionHolds({ textMatches: "order \\d+$" }, only(m))).toBe(true);
    expect(conditionHolds({ textMatches: "^order" }, only(m))).toBe(false);
    expect(conditionHolds({ metadata: { channel: "email", "nested.level": 2 } }, only(m))).toBe(true);
    expect(conditionHolds({ metadata: { "nested.level": "2" } }, only(m))).toBe(false); // JSON equality: 2 is not "2"
    expect(conditionHolds({ data: { "order.priority": "high", tags: ["a"] } }, only(m))).toBe(true);
    expect(conditionHolds({ data: { "order.missing": null } }, only(m))).toBe(false); // an absent path never matches
    expect(conditionHolds({ textContains: "refund", data: { "order.id": 43 } }, only(m))).toBe(false);
  });

  it("the first matching case wins; else the default; else the next node", () => {
    const node: SwitchNode = {
      kind: "switch",
      id: "route",
      cases: [
        { when: { textContains: "refund" }, goto: "refunds" },
        { when: { textContains: "order" }, goto: "orders" },
      ],
      default: "$end",
    };
    expect(switchTarget(node, only(message()))).toEqual({ target: "refunds", matched: 0 });
    expect(switchTarget(node, only(message({ parts: [{ kind: "text", text: "my order" }] })))).toEqual({
      target: "orders",
      matched: 1,
    });
    expect(switchTarget(node, only(message({ parts: [{ kind: "text", text: "hi" }] })))).toEqual({
      target: "$end",
      matched: "default",
    });
    expect(switchTarget({ ...node, default: undefined } as SwitchNode, only(message({ parts: [] })))).toEqual({
      target: undefined,
      matched: "default",
    });
  });
});

const definition = (over: Partial<WorkflowDefinition> & { nodes: unknown[] }): unknown => ({
  id: "t",
  name: "t",
  description: "t",
  ...over,
});

describe("the message a switch routes on in a task", () => {
  it("is the caller's newest message (the reply after an interrupt), never an agent message", () => {
    const first = message({ messageId: "first" });
    const reply = message({ messageId: "reply" });
    const agent: Message = { messageId: "agent", role: "agent", parts: [] };
    expect(incomingMessageOf({ history: [first, agent] } as unknown as TaskContext)?.messageId).toBe("first");
    expect(incomingMessageOf({ history: [first, agent, reply, agent] } as unknown as TaskContext)?.messageId).toBe(
      "reply",
    );
  });

  it("is still the newest reply once later agent messages pushed it out of the head's window of recent history", () => {
    const actor = createTaskActor({
      taskId: "t",
      contextId: "c",
      workflowId: "w",
      tenant: "x",
      firstNode: "gate",
      message: message({ messageId: "first" }),
    });
    const at = "2026-03-01T10:00:00.000Z";
    const interrupt = (i: number) => ({
      type: "INTERRUPT" as const,
      at,
      interrupt: {
        interruptId: `i-${i}`,
        nodeId: "gate",
        kind: "approval" as const,
        data: { actions: ["accept"] },
        requestedAt: at,
        exchanges: [],
      },
      statusMessage: { messageId: `status-${i}`, role: "agent" as const, parts: [] },
    });
    applyTaskEvent(actor, { type: "START", at });
    applyTaskEvent(actor, interrupt(0));
    applyTaskEvent(actor, {
      type: "RESUME",
      at,
      nodeId: "gate",
      resumeValue: {},
      resolvedBy: "a",
      message: message({ messageId: "reply" }),
      next: "gate",
      output: {},
    });
    // Timeouts and new interrupts: agent messages only, more than the window holds.
    for (let i = 1; i <= RECENT_HISTORY; i++) {
      applyTaskEvent(actor, interrupt(i));
      applyTaskEvent(actor, {
        type: "RESUME",
        at,
        nodeId: "gate",
        resumeValue: {},
        resolvedBy: "system:timeout",
        next: "gate",
        output: {},
      });
    }
    const context = actor.getSnapshot().context;
    expect(context.history.some((m) => m.role === "user")).toBe(false);
    expect(incomingMessageOf(context)?.messageId).toBe("reply");
  });
});

describe("workflow definitions with switch, next and stateless", () => {
  it("loads a switch with $end and node targets, and a task's next; nodeAfter follows next", () => {
    const workflow = checkWorkflow(
      definition({
        nodes: [
          { kind: "switch", id: "route", cases: [{ when: { textContains: "x" }, goto: "b" }], default: "$end" },
          { kind: "task", id: "a", handler: "echo", next: "$end" },
          { kind: "task", id: "b", handler: "echo", next: "a" },
        ],
      }),
      builtinHandlers,
    );
    expect(nodeAfter(workflow, "a")).toBeNull();
    expect(nodeAfter(workflow, "b")).toBe("a");
    expect(nodeAfter(workflow, "route")).toBe("a");
  });

  it("refuses unknown targets, empty conditions and a stateless workflow with a node that would wait", () => {
    expect(() =>
      checkWorkflow(
        definition({ nodes: [{ kind: "switch", id: "r", cases: [{ when: { textContains: "x" }, goto: "nowhere" }] }] }),
        builtinHandlers,
      ),
    ).toThrow(/cases\/0\/goto: unknown node id 'nowhere'/);
    expect(() =>
      checkWorkflow(
        definition({ nodes: [{ kind: "switch", id: "r", cases: [{ when: {}, goto: "$end" }] }] }),
        builtinHandlers,
      ),
    ).toThrow(/when/);
    expect(() =>
      checkWorkflow(
        definition({ nodes: [{ kind: "task", id: "a", handler: "echo", next: "elsewhere" }] }),
        builtinHandlers,
      ),
    ).toThrow(/next: unknown node id 'elsewhere'/);
    expect(() =>
      checkWorkflow(
        definition({
          stateless: true,
          nodes: [
            { kind: "task", id: "a", handler: "echo" },
            { kind: "approval", id: "g", title: "G" },
          ],
        }),
        builtinHandlers,
      ),
    ).toThrow(WorkflowLoadError);
  });
});

describe("the stateless runner", () => {
  // No tasks to read: referencedTasks and contextTasks are covered over a real server (test/integration/handler-conversation.test.ts).
  const reads: ConversationReads = {
    get: async (id) => Promise.reject(taskNotFound(id)),
    list: async () => ({ records: [], total: 0 }),
    contextOf: () => {
      throw new Error("no tasks");
    },
  };
  const skills = new StatelessSkills({ handlers: builtinHandlers, logger: createLogger("silent"), reads });
  const signal = new AbortController().signal;
  const quick = checkWorkflow(
    definition({
      stateless: true,
      nodes: [
        {
          kind: "switch",
          id: "route",
          cases: [
            { when: { metadata: { mode: "stream" } }, goto: "stream" },
            { when: { textContains: "boom" }, goto: "boom" },
          ],
          default: "echo",
        },
        { kind: "task", id: "echo", handler: "echo", next: "$end" },
        { kind: "task", id: "boom", handler: "fail", params: { code: "kaput" }, next: "$end" },
        { kind: "task", id: "stream", handler: "stream-text", params: { chunks: 3, delayMs: 0 } },
      ],
    }),
    builtinHandlers,
  );

  it("answers an agent Message with the handlers' artifact parts, in the caller's context", async () => {
    const answer = await skills.answer(
      quick,
      message({ contextId: "ctx-1", parts: [{ kind: "text", text: "hi" }] }),
      signal,
      "t1",
    );
    expect(answer).toMatchObject({
      role: "agent",
      contextId: "ctx-1",
      parts: [{ kind: "text", text: "hi" }],
      metadata: { openwop: { skillId: "t", stateless: true } },
    });
  });

  it("gathers streamed chunks into one artifact's parts", async () => {
    const answer = await skills.answer(
      quick,
      message({ parts: [{ kind: "text", text: "abcdef" }], metadata: { mode: "stream" } }),
      signal,
      "t1",
    );
    expect(answer.parts).toEqual([
      { kind: "text", text: "ab" },
      { kind: "text", text: "cd" },
      { kind: "text", text: "ef" },
    ]);
  });

  it("a stateless switch routes on an earlier node's output (issue 40)", async () => {
    const byOutput = checkWorkflow(
      definition({
        stateless: true,
        nodes: [
          { kind: "task", id: "first", handler: "echo" },
          {
            kind: "switch",
            id: "route",
            cases: [{ when: { output: { "first.text": "fail please" } }, goto: "boom" }],
            default: "$end",
          },
          { kind: "task", id: "boom", handler: "fail", params: { code: "routed" }, next: "$end" },
        ],
      }),
      builtinHandlers,
    );
    const routed = await skills.answer(
      byOutput,
      message({ parts: [{ kind: "text", text: "fail please" }] }),
      signal,
      "t1",
    );
    expect(routed.parts).toEqual([{ kind: "text", text: "The skill failed (routed)." }]);
    const passed = await skills.answer(byOutput, message({ parts: [{ kind: "text", text: "hello" }] }), signal, "t1");
    expect(passed.parts).toEqual([{ kind: "text", text: "hello" }]);
  });

  it("a handler failure is a Message saying so, with the code in metadata", async () => {
    const answer = await skills.answer(quick, message({ parts: [{ kind: "text", text: "boom" }] }), signal, "t1");
    expect(answer.parts).toEqual([{ kind: "text", text: "The skill failed (kaput)." }]);
    expect(answer.metadata).toMatchObject({ openwop: { error: { code: "kaput" } } });
  });
});
