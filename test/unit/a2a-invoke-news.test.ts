// The pure parts of learning by push or stream: which pushed status is news, folding stream events into the
// task, reading push bodies of both versions, SSE framing, the per-visit callback token, the news inbox.
import { describe, expect, it } from "vitest";
import { foldPeerEvent, isNewPeerStatus } from "../../src/engine/nodes/a2a-invoke/a2a-invoke.js";
import { PeerNewsBoard } from "../../src/engine/nodes/a2a-invoke/a2a-invoke-news.js";
import { PeerCallbackKey, peerCallbackUrl } from "../../src/peer/peer-callbacks.js";
import { peerVersions } from "../../src/a2a/versions.js";
import { decodePeerPush } from "../../src/peer/peer-push-body.js";
import { sseData } from "../../src/peer/peer-sse.js";
import type { PeerTask } from "../../src/peer/peer-types.js";
import { signPushBody } from "../../src/push/push-signature.js";
import { verifyBodySignature } from "../../src/secrets/hmac-signature.js";
import { SecretValue } from "../../src/secrets/secret-value.js";

const task: PeerTask = { id: "p1", contextId: "c1", state: "working", artifacts: [], history: [] };

describe("isNewPeerStatus", () => {
  const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
  it("a new state is news; the same state again is not (unless a new question while interrupted)", () => {
    expect(
      isNewPeerStatus({ peerState: "working", peerStatusAt: at(1) }, { state: "input-required", timestamp: at(2) }),
    ).toBe(true);
    expect(isNewPeerStatus({ peerState: "working", peerStatusAt: at(1) }, { state: "working", timestamp: at(2) })).toBe(
      false,
    );
    expect(
      isNewPeerStatus(
        { peerState: "input-required", peerStatusAt: at(1) },
        { state: "input-required", timestamp: at(2) },
      ),
    ).toBe(true);
    expect(
      isNewPeerStatus(
        { peerState: "input-required", peerStatusAt: at(2) },
        { state: "input-required", timestamp: at(2) },
      ),
    ).toBe(false);
  });
  it("an older status is a replay; nothing follows a recorded terminal state; a terminal push is always news", () => {
    expect(
      isNewPeerStatus({ peerState: "input-required", peerStatusAt: at(5) }, { state: "working", timestamp: at(1) }),
    ).toBe(false);
    expect(
      isNewPeerStatus({ peerState: "completed", peerStatusAt: at(1) }, { state: "working", timestamp: at(9) }),
    ).toBe(false);
    expect(isNewPeerStatus({ peerState: "completed" }, { state: "completed" })).toBe(false);
    expect(
      isNewPeerStatus({ peerState: "working", peerStatusAt: at(9) }, { state: "completed", timestamp: at(1) }),
    ).toBe(true);
  });
});

describe("foldPeerEvent", () => {
  it("status updates replace the status; artifact updates add, replace or append; other tasks' events are ignored", () => {
    let t = foldPeerEvent(task, {
      kind: "artifact",
      taskId: "p1",
      artifact: { artifactId: "a", parts: [{ kind: "text", text: "1" }] },
      append: false,
    });
    t = foldPeerEvent(t, {
      kind: "artifact",
      taskId: "p1",
      artifact: { artifactId: "a", parts: [{ kind: "text", text: "2" }] },
      append: true,
    });
    t = foldPeerEvent(t, {
      kind: "status",
      taskId: "p1",
      state: "completed",
      statusTimestamp: "2026-01-01T00:00:00.000Z",
      statusMessage: { messageId: "m", role: "agent", parts: [{ kind: "text", text: "done" }] },
    });
    t = foldPeerEvent(t, { kind: "status", taskId: "other", state: "failed" });
    expect(t.state).toBe("completed");
    expect(t.artifacts[0]!.parts).toEqual([
      { kind: "text", text: "1" },
      { kind: "text", text: "2" },
    ]);
    expect(t.statusMessage?.messageId).toBe("m");
    expect(foldPeerEvent(t, { kind: "task", task: { ...task, state: "working" } }).state).toBe("working");
  });
});

describe("decodePeerPush", () => {
  it("reads a 1.0 StreamResponse and a 0.3 status-update or Task", () => {
    expect(
      decodePeerPush(
        JSON.stringify({
          statusUpdate: {
            taskId: "p1",
            contextId: "c1",
            status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00Z" },
          },
        }),
        peerVersions(),
      ),
    ).toMatchObject({ kind: "status", taskId: "p1", state: "completed" });
    expect(
      decodePeerPush(
        JSON.stringify({
          kind: "status-update",
          taskId: "p1",
          contextId: "c1",
          status: { state: "input-required" },
          final: false,
        }),
        peerVersions(),
      ),
    ).toMatchObject({ kind: "status", state: "input-required" });
    expect(
      decodePeerPush(
        JSON.stringify({ kind: "task", id: "p1", contextId: "c1", status: { state: "completed" }, artifacts: [] }),
        peerVersions(),
      ),
    ).toMatchObject({ kind: "task", task: { id: "p1", state: "completed" } });
  });
  it("refuses what is not a push body", () => {
    expect(() => decodePeerPush("not json", peerVersions())).toThrow();
    expect(() => decodePeerPush(JSON.stringify({ statusUpdate: { status: { state: 5 } } }), peerVersions())).toThrow();
    expect(() => decodePeerPush(JSON.stringify({ kind: "status-update" }), peerVersions())).toThrow();
  });
});

describe("sseData", () => {
  async function* chunks(...parts: string[]) {
    yield* parts;
  }
  it("splits events across chunks, joins data lines, skips comments", async () => {
    const out: string[] = [];
    for await (const d of sseData(
      chunks(": keepalive\n\n", 'data: {"a"', ":1}\n\nevent: x\ndata: 1\ndata: 2\r\n\r\n"),
      1000,
    ))
      out.push(d);
    expect(out).toEqual(['{"a":1}', "1\n2"]);
  });
  it("caps one event's size", async () => {
    const run = async () => {
      for await (const _ of sseData(chunks("data: " + "x".repeat(100)), 50)) void _;
    };
    await expect(run()).rejects.toThrow(/more than 50 bytes/);
  });
});

describe("peer callback tokens and signatures", () => {
  const key = new PeerCallbackKey(new SecretValue(Buffer.alloc(32, 7)));
  it("a token belongs to one task and one visit", () => {
    const token = key.tokenFor("t1", "t1:call:1");
    expect(key.matches("t1", "t1:call:1", token)).toBe(true);
    expect(key.matches("t1", "t1:call:2", token)).toBe(false);
    expect(key.matches("t2", "t1:call:1", token)).toBe(false);
    expect(key.matches("t1", "t1:call:1", `${token}x`)).toBe(false);
    expect(new PeerCallbackKey(new SecretValue(Buffer.alloc(32, 8))).matches("t1", "t1:call:1", token)).toBe(false);
    expect(peerCallbackUrl("https://h.example/", "a/b")).toBe("https://h.example/v1/peer-callbacks/a%2Fb");
  });
  it("verifies our own push worker's signature format", () => {
    const now = Math.floor(Date.now() / 1000);
    const signature = signPushBody("peer-signing-key-0123456789", now, "{}");
    expect(
      verifyBodySignature({ key: "peer-signing-key-0123456789", body: "{}", timestamp: String(now), signature }),
    ).toBe(true);
    expect(
      verifyBodySignature({ key: "peer-signing-key-0123456789", body: "{ }", timestamp: String(now), signature }),
    ).toBe(false);
    expect(
      verifyBodySignature({
        key: "peer-signing-key-0123456789",
        body: "{}",
        timestamp: String(now - 1000),
        signature: signPushBody("peer-signing-key-0123456789", now - 1000, "{}"),
      }),
    ).toBe(false);
  });
});

describe("PeerNewsBoard", () => {
  it("news posted before the wait is kept; only the newest stream snapshot; times out; closes", async () => {
    const board = new PeerNewsBoard();
    const watch = board.watch("t1");
    const signal = new AbortController().signal;
    board.post("t1", { kind: "stream", task });
    board.post("t1", { kind: "stream", task: { ...task, state: "completed" } });
    board.post("t2", { kind: "fetch" });
    expect(await watch.next(1000, signal)).toMatchObject({ kind: "stream", task: { state: "completed" } });
    expect(await watch.next(10, signal)).toBe("timeout");
    setTimeout(() => board.post("t1", { kind: "push", state: "completed", pushedAt: "x" }), 5);
    expect(await watch.next(1000, signal)).toMatchObject({ kind: "push" });
    watch.close();
    board.post("t1", { kind: "fetch" });
    expect(await watch.next(5, signal)).toBe("timeout");
  });
  it("post answers whether a node waits here (an unsigned push's wake needs no commit then)", () => {
    const board = new PeerNewsBoard();
    expect(board.post("t1", { kind: "fetch" })).toBe(false);
    const watch = board.watch("t1");
    expect(board.post("t1", { kind: "fetch" })).toBe(true);
    expect(board.post("t2", { kind: "fetch" })).toBe(false);
    watch.close();
    expect(board.post("t1", { kind: "fetch" })).toBe(false);
  });
});
