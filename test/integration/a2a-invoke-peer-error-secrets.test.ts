// A peer that quotes our request in its error text (here: a 401 whose message echoes the Authorization header)
// must not carry the peer's configured credentials into the node's failure, which callers read.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";

const PEER_KEY = `peer-key-${randomBytes(12).toString("hex")}`;

describe("a2a.invoke: a peer's error text never carries our credentials back", () => {
  let t: TestApp;
  let peer: Server;
  beforeAll(async () => {
    // The careless peer: every request is refused with a message quoting the Authorization header it got.
    peer = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const body = JSON.stringify({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32001, message: `rejected ${String(req.headers["authorization"])}` },
        });
        res.writeHead(401, { "content-type": "application/json" }).end(body);
      });
    });
    await new Promise<void>((r) => peer.listen(0, "127.0.0.1", r));
    const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/a2a/jsonrpc`;
    const dir = await mkdtemp(join(tmpdir(), "peer-error-secrets-"));
    await writeFile(
      join(dir, "call-careless.json"),
      JSON.stringify({
        id: "call-careless",
        name: "Call careless",
        description: "Calls a peer that echoes headers.",
        nodes: [{ kind: "a2a.invoke", id: "call", peer: "careless" }],
      }),
    );
    t = await startTestApp({
      WORKFLOWS_DIR: dir,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEER_MAX_ATTEMPTS: "2",
      A2A_PEER_RETRY_BASE_MS: "20",
      A2A_PEER_RETRY_MAX_MS: "40",
      BLOCKING_TIMEOUT_MS: "5000",
      A2A_PEERS: JSON.stringify({
        careless: { url: peerUrl, binding: "jsonrpc", protocolVersion: "1.0", credentials: { bearer: PEER_KEY } },
      }),
    });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((r) => peer?.close(r));
  });

  it("the failed task says what the peer said, with the credential redacted, on the answer and in the store", async () => {
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "hi" }],
            metadata: { skillId: "call-careless" },
          },
        },
      }),
    });
    const text = await res.text();
    const task = (JSON.parse(text) as { result: Record<string, any> }).result;
    expect(task["status"].state, text).toBe("failed");
    const error = task["metadata"]["openwop"]["error"];
    expect(error.code).toBe("external_call_failed");
    expect(error.message).toContain("HTTP 401");
    expect(error.message).toContain("rejected Bearer [redacted]");
    expect(text).not.toContain(PEER_KEY);
    const got = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/get", params: { id: task["id"] } }),
    });
    expect(await got.text()).not.toContain(PEER_KEY);
    expect(JSON.stringify(await t.store.get(task["id"] as string))).not.toContain(PEER_KEY);
    expect(JSON.stringify(await t.store.readEvents(task["id"] as string, 0))).not.toContain(PEER_KEY);
  });
});
