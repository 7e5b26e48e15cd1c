// OpenWOP v2 interop.md for the `a2a.invoke` node's own calls, against real peers (the @a2a-js/sdk server of
// test/support/a2a-peer.ts, and a card server on loopback): every version negotiation with a peer leaves a content-free
// `negotiation.decided` on the run's log (accepted, downgraded, refused; the peer as a digest of its origin), and every
// message sent to a peer carries W3C trace context in `metadata.openwop` with tracing off: the trace the run's creating
// message named (preferred to any header), else the run's own.
import { createHash, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { RunEvent } from "../../src/domain/task-record.js";
import { startTestPeer, type TestPeer } from "../support/a2a-peer.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const FAST = {
  A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
  A2A_PEER_POLL_MS: "25",
  A2A_PEER_RETRY_BASE_MS: "20",
  A2A_PEER_RETRY_MAX_MS: "40",
  A2A_PEER_MAX_ATTEMPTS: "2",
  A2A_PEER_REQUEST_TIMEOUT_MS: "2000",
  BLOCKING_TIMEOUT_MS: "5000",
};
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const digestOf = (url: string) => `sha256:${createHash("sha256").update(new URL(url).origin).digest("hex")}`;

async function workflowDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "a2a-interop-"));
  const call = (id: string, variable: string) => `
id: ${id}
name: ${id}
description: Calls a peer with the run's input.
nodes:
  - { kind: a2a.invoke, id: call, agentCardUrl: "\${${variable}}" }
`;
  await writeFile(join(dir, "old-peer.yaml"), call("old-peer", "OLD_PEER_CARD_URL"));
  await writeFile(join(dir, "new-peer.yaml"), call("new-peer", "NEW_PEER_CARD_URL"));
  await writeFile(join(dir, "odd-peer.yaml"), call("odd-peer", "ODD_PEER_CARD_URL"));
  return dir;
}

describe("a2a.invoke: negotiation.decided and trace context in metadata.openwop", () => {
  let oldPeer: TestPeer;
  let newPeer: TestPeer;
  let odd: Server;
  let oddUrl: string;
  let t: TestApp;

  /** A blocking JSON-RPC 0.3 message/send; `openwop` is the message's metadata.openwop, `traceparent` a header. */
  async function start(skillId: string, text: string, extra: { openwop?: object; traceparent?: string } = {}) {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(extra.traceparent ? { traceparent: extra.traceparent } : {}),
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text }],
            metadata: { skillId, ...(extra.openwop ? { openwop: extra.openwop } : {}) },
          },
          configuration: { blocking: true },
        },
      }),
    });
    return ((await res.json()) as { result: Record<string, any> }).result;
  }
  const decisions = async (runId: string): Promise<RunEvent[]> =>
    (await t.store.readEvents(runId, 0)).filter((e) => e.type === "negotiation.decided");

  beforeAll(async () => {
    [oldPeer, newPeer] = await Promise.all([startTestPeer(), startTestPeer({ v10: true })]);
    // A card offering only a version nobody speaks.
    odd = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          name: "odd",
          description: "speaks 0.2 only",
          version: "1",
          url: `http://127.0.0.1:1/a2a`,
          protocolVersion: "0.2.5",
          preferredTransport: "JSONRPC",
          capabilities: {},
          defaultInputModes: ["text/plain"],
          defaultOutputModes: ["text/plain"],
          skills: [],
        }),
      ),
    );
    await new Promise<void>((r) => odd.listen(0, "127.0.0.1", r));
    oddUrl = `http://127.0.0.1:${(odd.address() as AddressInfo).port}/.well-known/agent-card.json`;
    t = await startTestApp(
      {
        WORKFLOWS_DIR: await workflowDir(),
        OLD_PEER_CARD_URL: oldPeer.cardUrl,
        NEW_PEER_CARD_URL: newPeer.cardUrl,
        ODD_PEER_CARD_URL: oddUrl,
        WORKFLOW_VARIABLES: "OLD_PEER_CARD_URL,NEW_PEER_CARD_URL,ODD_PEER_CARD_URL",
        ...FAST,
      },
      new MemoryTaskStore(),
    );
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([oldPeer?.close(), newPeer?.close()]);
    odd?.closeAllConnections();
    await new Promise((r) => odd?.close(r));
  });

  it("a peer offering 1.0: accepted, on the run's log before the node's first progress, peer as a digest", async () => {
    const task = await start("new-peer", "scenario:complete");
    expect(task["status"].state).toBe("completed");
    const log = await t.store.readEvents(task["id"], 0);
    const [decided] = await decisions(task["id"]);
    expect(decided?.payload).toEqual({
      protocol: "a2a",
      peer: digestOf(newPeer.cardUrl),
      requested: "1.0",
      negotiated: "1.0",
      outcome: "accepted",
      reason: "peer-offers-requested-version",
    });
    expect(decided?.nodeId).toBe("call");
    expect(JSON.stringify(decided?.payload)).not.toContain("127.0.0.1");
    const types = log.map((e) => e.type);
    expect(types.indexOf("negotiation.decided")).toBe(types.indexOf("node.progress") - 1);
  });

  it("a peer offering 0.3 only: downgraded, said so", async () => {
    const task = await start("old-peer", "scenario:complete");
    expect(task["status"].state).toBe("completed");
    expect((await decisions(task["id"])).map((e) => e.payload)).toEqual([
      expect.objectContaining({ requested: "1.0", negotiated: "0.3", outcome: "downgraded" }),
    ]);
  });

  it("a peer offering no version we speak: refused, then the node fails; no progress is recorded", async () => {
    const task = await start("odd-peer", "hello");
    expect(task["status"].state).toBe("failed");
    const log = await t.store.readEvents(task["id"], 0);
    expect((await decisions(task["id"])).map((e) => e.payload)).toEqual([
      {
        protocol: "a2a",
        peer: digestOf(oddUrl),
        requested: "1.0",
        negotiated: null,
        outcome: "refused",
        reason: "peer-offers-no-acceptable-version",
      },
    ]);
    const types = log.map((e) => e.type);
    expect(types.indexOf("negotiation.decided")).toBeLessThan(types.indexOf("run.failed"));
  });

  it("the message to a peer carries the trace the creating message named, preferred to the traceparent header", async () => {
    const named = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const header = "00-11111111111111111111111111111111-2222222222222222-01";
    const task = await start("old-peer", "scenario:complete", {
      openwop: { traceparent: named, tracestate: "vendor=abc" },
      traceparent: header,
    });
    const trace = (oldPeer.sends().at(-1)?.metadata?.["openwop"] ?? {}) as Record<string, string>;
    const [, traceId, parentId, flags] = TRACEPARENT.exec(trace["traceparent"] ?? "") ?? [];
    expect(traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    // A new parent id (this call), the caller's sampling flag and tracestate.
    expect(parentId).not.toBe("00f067aa0ba902b7");
    expect(flags).toBe("01");
    expect(trace["tracestate"]).toBe("vendor=abc");
    expect(task["status"].state).toBe("completed");
  });

  it("without a trace from the caller, or with a malformed one, the run's own trace: a digest of its id, not sampled", async () => {
    for (const openwop of [undefined, { traceparent: "00-zz-not-a-trace" }]) {
      const task = await start("old-peer", "scenario:complete", openwop ? { openwop } : {});
      const trace = (oldPeer.sends().at(-1)?.metadata?.["openwop"] ?? {}) as Record<string, string>;
      const runTrace = createHash("sha256").update(task["id"]).digest("hex").slice(0, 32);
      expect(trace["traceparent"]).toMatch(new RegExp(`^00-${runTrace}-[0-9a-f]{16}-00$`));
      expect(trace["tracestate"]).toBeUndefined();
    }
  });
});
