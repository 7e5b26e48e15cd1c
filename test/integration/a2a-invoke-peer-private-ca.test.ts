// Peers whose servers hold certificates from a private CA, without client certificates: A2A_PEERS_CA_FILE is
// trusted for them (JSON-RPC over undici, gRPC over connect-node HTTP/2). Without it the call fails with a TLS
// reason, logged once with its cause and what to do, and counted. Certificates are made here with openssl.
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import { createServer as createHttpsServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { TestCertificates } from "../support/test-certificates.js";

const task = (id: string) => ({
  kind: "task",
  id,
  contextId: "ctx-1",
  status: { state: "completed", timestamp: new Date().toISOString() },
  artifacts: [{ artifactId: "a1", parts: [{ kind: "text", text: "done" }] }],
  history: [],
});

describe("a2a.invoke to peers behind a private CA", () => {
  const certs = new TestCertificates();
  const ca = certs.ca("peers-private-ca");
  const leaf = certs.leaf("peer", ca, "/CN=peer.internal", { san: "IP:127.0.0.1" });
  let jsonRpcPeer: Server;
  let grpcPeer: Http2SecureServer;
  let grpcCalls = 0;
  let dir = "";
  let env: Record<string, string> = {};

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "peer-private-ca-"));
    jsonRpcPeer = createHttpsServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const rpc = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          id: string;
          method: string;
          params: { id?: string };
        };
        const result = rpc.method === "message/send" ? task(randomUUID()) : task(rpc.params.id ?? "unknown");
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result }));
      });
    });
    await new Promise<void>((r) => jsonRpcPeer.listen(0, "127.0.0.1", r));
    grpcPeer = createSecureServer({ cert: leaf.cert, key: leaf.key, allowHTTP1: false });
    grpcPeer.on("stream", (stream) => {
      grpcCalls++;
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "grpc-status": "12", "grpc-message": "nothing here" },
        { endStream: true },
      );
    });
    grpcPeer.on("error", () => undefined);
    await new Promise<void>((r) => grpcPeer.listen(0, "127.0.0.1", r));
    const peers = {
      internal: {
        url: `https://127.0.0.1:${(jsonRpcPeer.address() as AddressInfo).port}/a2a`,
        binding: "jsonrpc",
        protocolVersion: "0.3",
        credentials: { bearer: "internal-peer-token-1" },
      },
      "internal-grpc": {
        url: `https://127.0.0.1:${(grpcPeer.address() as AddressInfo).port}`,
        binding: "grpc",
        protocolVersion: "1.0",
      },
    };
    for (const name of Object.keys(peers)) {
      await writeFile(
        join(dir, `call-${name}.json`),
        JSON.stringify({
          id: `call-${name}`,
          name: `Call ${name}`,
          description: `Calls ${name}.`,
          nodes: [{ kind: "a2a.invoke", id: "call", peer: name }],
        }),
      );
    }
    env = {
      WORKFLOWS_DIR: dir,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEER_POLL_MS: "25",
      A2A_PEER_RETRY_BASE_MS: "20",
      A2A_PEER_RETRY_MAX_MS: "40",
      A2A_PEER_MAX_ATTEMPTS: "2",
      A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
      A2A_PEERS: JSON.stringify(peers),
      LOG_LEVEL: "info",
    };
  });

  afterAll(async () => {
    jsonRpcPeer?.closeAllConnections();
    await new Promise((r) => jsonRpcPeer?.close(r));
    await new Promise((r) => grpcPeer?.close(r));
    certs.remove();
  });

  async function run(caller: TestApp, peer: string): Promise<WireTask> {
    const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false });
    const started = await ours.start(`hello ${peer}`, `call-${peer}`);
    return ours.waitFor(
      started["id"],
      (t) => ["completed", "failed", "canceled", "rejected"].includes(t["status"].state),
      "a final state",
    );
  }

  it("with A2A_PEERS_CA_FILE: both wires trust the peer's server", async () => {
    const caller = await startTestApp({ ...env, A2A_PEERS_CA_FILE: ca.certFile, LOG_LEVEL: "silent" });
    try {
      const done = await run(caller, "internal");
      expect(done["status"].state, JSON.stringify(done["metadata"])).toBe("completed");
      const grpc = await run(caller, "internal-grpc");
      // The endpoint answers every call UNIMPLEMENTED: reaching it at all needed the handshake to verify.
      expect(grpc["metadata"]["openwop"]["error"].message).toContain("gRPC status UNIMPLEMENTED");
      expect(grpcCalls).toBeGreaterThan(0);
    } finally {
      await caller.close();
    }
  });

  it("without it: the node fails with a TLS reason, logged once per server and cause with what to do, and counted", async () => {
    const logs: string[] = [];
    const caller = await startTestApp(env, undefined, undefined, { logs });
    try {
      const before = grpcCalls;
      for (const peer of ["internal", "internal", "internal-grpc"]) {
        const failed = await run(caller, peer);
        expect(failed["status"].state).toBe("failed");
        expect(failed["metadata"]["openwop"]["error"].message).toMatch(
          /TLS error talking to .*UNABLE_TO_VERIFY_LEAF_SIGNATURE/,
        );
      }
      expect(grpcCalls).toBe(before);
      const tls = logs
        .map((line) => JSON.parse(line) as { msg: string; where?: string; cause?: string })
        .filter((l) => l.msg.startsWith("TLS to peer"));
      // One line per server (the JSON-RPC one, asked 4 times; the gRPC one, asked twice).
      expect(tls.map((l) => l.cause)).toEqual(["unknown-ca", "unknown-ca"]);
      expect(new Set(tls.map((l) => l.where)).size).toBe(2);
      expect(tls[0]!.msg).toContain("A2A_PEERS_CA_FILE");
      const metrics = await (await fetch(`${caller.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/openwop_egress_tls_failures_total\{subject="peer",cause="unknown-ca"[^}]*\} 6$/m);
    } finally {
      await caller.close();
    }
  });
});
