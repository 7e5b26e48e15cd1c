import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor, filterDigest } from "../../src/console/console-cursor.js";
import { nodePathOf, nodeTitle, redactSecrets, REDACTED, waitingForOf } from "../../src/console/console-task-view.js";
import { workflowGraphOf } from "../../src/console/console-workflow-graph.js";
import { builtinNodeKinds } from "../../src/engine/nodes/node-registry.js";
import type { TaskContext } from "../../src/machine/task-context.js";
import type { WorkflowDefinition } from "../../src/workflows/workflow-types.js";

describe("console task view", () => {
  it("redacts secrets in event payloads: push tokens, credentials, interrupt tokens, URL userinfo", () => {
    const payload = {
      nodeId: "n",
      pushNotificationConfig: {
        url: "https://hooks.example.com/x",
        token: "push-secret",
        authentication: { schemes: ["Bearer"], credentials: "cred-secret" },
      },
      resolveToken: "eyJ.resolve.token",
      headers: { Authorization: "Bearer abc", "X-Api-Key": "k1" },
      endpoint: "https://user:pw@peer.example.com/a2a",
      nested: [{ password: "p" }, { keep: "visible" }],
      key: "task:node:interrupt",
    };
    const out = JSON.stringify(redactSecrets(payload));
    for (const secret of ["push-secret", "cred-secret", "eyJ.resolve.token", "Bearer abc", "k1", "user:pw", '"p"'])
      expect(out).not.toContain(secret);
    expect(out).toContain(REDACTED);
    expect(out).toContain("visible");
    expect(out).toContain("https://[redacted]@peer.example.com/a2a");
    expect(out).toContain("task:node:interrupt");
  });

  it("labels an untitled node by its kind: an http node says http, its method and host (never a peer), whether its URL is literal or a ${VARIABLE}", () => {
    const workflow = {
      id: "w",
      name: "W",
      description: "",
      nodes: [
        { kind: "http", id: "notify", url: "https://user:pw@hooks.example.com:8443/path?key=secret" },
        { kind: "http", id: "configured", method: "PUT", url: "${NOTIFY_URL}/hooks/x?token=t" },
        { kind: "http", id: "templated", url: "https://me:${PASSWORD}@${NOTIFY_HOST}/x" },
        { kind: "a2a.invoke", id: "ask", agentCardUrl: "${A2A_PEER_CARD_URL}" },
        { kind: "http", id: "titled", title: "Tell the CRM", url: "https://crm.example.com/x" },
      ],
    } as unknown as WorkflowDefinition;
    const titles = workflow.nodes.map((n) => nodeTitle(n, builtinNodeKinds()));
    expect(titles).toEqual([
      "http POST https://hooks.example.com:8443",
      "http PUT ${NOTIFY_URL}",
      "http POST https://${NOTIFY_HOST}",
      "call ${A2A_PEER_CARD_URL}",
      "Tell the CRM",
    ]);
    expect(titles.join(" ")).not.toMatch(/configured peer|secret|pw|PASSWORD|token/);
    // The workflow graph the console draws carries the same labels.
    const graph = workflowGraphOf(workflow, builtinNodeKinds());
    expect(graph.nodes.slice(0, 2).map((n) => n.title)).toEqual([
      "http POST https://hooks.example.com:8443",
      "http PUT ${NOTIFY_URL}",
    ]);
    // The graph's sub-label of an http node: its method and the target host (no userinfo, path or query).
    expect(graph.nodes.slice(0, 3).map((n) => n.label)).toEqual([
      "POST hooks.example.com:8443",
      "PUT ${NOTIFY_URL}",
      "POST ${NOTIFY_HOST}",
    ]);
  });

  it("an a2a.invoke node says what its task waits for: the peer's task (with its state), or a reply to the peer's question", () => {
    const workflow = {
      id: "w",
      name: "W",
      description: "",
      nodes: [{ kind: "a2a.invoke", id: "ask", agentCardUrl: "https://user:pw@peer.example.com/card?k=s" }],
    } as unknown as WorkflowDefinition;
    const base = {
      cursor: "ask",
      nodeStarted: true,
      nodeProgress: { ask: { peerState: "working" } },
    } as unknown as TaskContext;
    expect(waitingForOf("running", base, workflow, builtinNodeKinds())).toEqual({
      kind: "peer",
      label: "the peer agent https://peer.example.com (working)",
      nodeId: "ask",
    });
    const asked = {
      ...base,
      interrupt: {
        interruptId: "i",
        nodeId: "ask",
        kind: "clarification",
        data: {},
        requestedAt: "2026-01-01T00:00:00.000Z",
        exchanges: [],
      },
    } as TaskContext;
    expect(waitingForOf("waiting-input", asked, workflow, builtinNodeKinds())).toEqual({
      kind: "peer",
      label: "a reply to the peer agent https://peer.example.com",
      nodeId: "ask",
      since: "2026-01-01T00:00:00.000Z",
    });
    expect(
      waitingForOf("completed", { ...base, cursor: null } as TaskContext, workflow, builtinNodeKinds()),
    ).toBeUndefined();
  });

  it("the node path collapses repeats and keeps refine loops", () => {
    const e = (type: string, nodeId?: string) => ({ type, ...(nodeId ? { nodeId } : {}) });
    expect(
      nodePathOf([
        e("run.created"),
        e("node.started", "prepare"),
        e("node.completed", "prepare"),
        e("node.suspended", "gate"),
        e("interrupt.requested", "gate"),
        e("node.started", "prepare"),
        e("node.suspended", "gate"),
      ]),
    ).toEqual(["prepare", "gate", "prepare", "gate"]);
  });

  it("cursors round-trip and refuse tampering, other filters and junk", () => {
    const digest = filterDigest({ state: "completed" });
    const cursor = encodeCursor({ updatedAt: "2030-01-01T00:00:00.000Z", taskId: "t-1" }, digest);
    expect(decodeCursor(cursor, digest)).toEqual({ updatedAt: "2030-01-01T00:00:00.000Z", taskId: "t-1" });
    expect(() => decodeCursor(cursor, filterDigest({}))).toThrow(/other filters/);
    const forged = Buffer.from(JSON.stringify({ v: 1, u: "2030-01-01", i: "t-1", f: digest })).toString("base64url");
    expect(() => decodeCursor(forged, digest)).toThrow(/bad position/);
    const extra = Buffer.from(
      JSON.stringify({ v: 1, u: "2030-01-01T00:00:00.000Z", i: "t-1", f: digest, $where: 1 }),
    ).toString("base64url");
    expect(() => decodeCursor(extra, digest)).toThrow(/cursor/);
    expect(() => decodeCursor("%%%", digest)).toThrow(/cursor/);
    expect(() => decodeCursor("x".repeat(2000), digest)).toThrow(/cursor/);
  });
});
