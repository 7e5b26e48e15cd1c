// Peers with mTLS: `credentials.mtls` gives a named peer's connections a client certificate (PEM files; the CA
// file replaces the default CAs for that peer). Certificates are made here with openssl. The peers are loopback
// TLS servers that REQUIRE a client certificate from their CA: a JSON-RPC 0.3 agent (undici) and an HTTP/2
// gRPC endpoint (connect-node) that answers every call UNIMPLEMENTED, which is enough to show the handshake
// went through. A certificate from another CA is refused by both; the key never reaches a record or the log.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import { createServer as createHttpsServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

/** A CA, and certificates it signs (EC P-256, a day long), in `dir`. */
function makeCa(
  dir: string,
  name: string,
): { cert: string; key: string; sign(cn: string, ext: string): { cert: string; key: string } } {
  const ca = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  execFileSync(
    "openssl",
    ["req", "-x509", ...ec, "-keyout", ca.key, "-out", ca.cert, "-days", "1", "-subj", `/CN=${name}`],
    { stdio: "ignore" },
  );
  return {
    ...ca,
    sign(cn, ext) {
      const out = { cert: join(dir, `${name}-${cn}.pem`), key: join(dir, `${name}-${cn}.key`) };
      const csr = join(dir, `${name}-${cn}.csr`);
      const extFile = join(dir, `${name}-${cn}.ext`);
      execFileSync("sh", ["-c", `printf '%s\\n' "${ext}" > "${extFile}"`]);
      execFileSync("openssl", ["req", ...ec, "-keyout", out.key, "-out", csr, "-subj", `/CN=${cn}`], {
        stdio: "ignore",
      });
      execFileSync(
        "openssl",
        [
          "x509",
          "-req",
          "-in",
          csr,
          "-CA",
          ca.cert,
          "-CAkey",
          ca.key,
          "-CAcreateserial",
          "-out",
          out.cert,
          "-days",
          "1",
          "-extfile",
          extFile,
        ],
        { stdio: "ignore" },
      );
      return out;
    },
  };
}

const task = (id: string) => ({
  kind: "task",
  id,
  contextId: "ctx-1",
  status: { state: "completed", timestamp: new Date().toISOString() },
  artifacts: [{ artifactId: "a1", parts: [{ kind: "text", text: "done over mTLS" }] }],
  history: [],
});

describe("a2a.invoke to peers with mTLS (client certificates)", () => {
  let caller: TestApp;
  let jsonRpcPeer: Server;
  let grpcPeer: Http2SecureServer;
  let keyPem = "";
  const clients: string[] = [];
  const grpcClients: string[] = [];
  let dir = "";
  let good: { cert: string; key: string };
  const ours = jsonRpcCaller(() => caller.baseUrl, { blocking: false });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "peer-mtls-"));
    const ca = makeCa(dir, "test-ca");
    const server = ca.sign("127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth");
    good = ca.sign("caller", "extendedKeyUsage=clientAuth");
    const other = makeCa(dir, "other-ca").sign("intruder", "extendedKeyUsage=clientAuth");
    keyPem = await readFile(good.key, "utf8");
    const tls = {
      cert: await readFile(server.cert),
      key: await readFile(server.key),
      ca: await readFile(ca.cert),
      requestCert: true,
      rejectUnauthorized: true,
    };
    jsonRpcPeer = createHttpsServer(tls, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        clients.push(String((req.socket as TLSSocket).getPeerCertificate().subject?.CN));
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
    grpcPeer = createSecureServer({ ...tls, allowHTTP1: false });
    grpcPeer.on("stream", (stream) => {
      grpcClients.push(String((stream.session?.socket as TLSSocket).getPeerCertificate().subject?.CN));
      stream.respond(
        { ":status": 200, "content-type": "application/grpc", "grpc-status": "12", "grpc-message": "nothing here" },
        { endStream: true },
      );
    });
    grpcPeer.on("error", () => undefined);
    await new Promise<void>((r) => grpcPeer.listen(0, "127.0.0.1", r));
    const jsonRpcUrl = `https://127.0.0.1:${(jsonRpcPeer.address() as AddressInfo).port}/a2a`;
    const grpcUrl = `https://127.0.0.1:${(grpcPeer.address() as AddressInfo).port}`;
    const mtls = (cert: { cert: string; key: string }) => ({
      mtls: { certFile: cert.cert, keyFile: cert.key, caFile: ca.cert },
    });
    const peers = {
      mtls: { url: jsonRpcUrl, binding: "jsonrpc", protocolVersion: "0.3", credentials: mtls(good) },
      intruder: { url: jsonRpcUrl, binding: "jsonrpc", protocolVersion: "0.3", credentials: mtls(other) },
      "grpc-mtls": {
        url: grpcUrl,
        binding: "grpc",
        protocolVersion: "1.0",
        credentials: { ...mtls(good), bearer: "grpc-bearer-token-1" },
      },
      "grpc-intruder": { url: grpcUrl, binding: "grpc", protocolVersion: "1.0", credentials: mtls(other) },
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
    caller = await startTestApp({
      WORKFLOWS_DIR: dir,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEER_POLL_MS: "25",
      A2A_PEER_RETRY_BASE_MS: "20",
      A2A_PEER_RETRY_MAX_MS: "40",
      A2A_PEER_MAX_ATTEMPTS: "2",
      A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
      A2A_PEERS: JSON.stringify(peers),
    });
  });

  afterAll(async () => {
    await caller?.close();
    jsonRpcPeer?.closeAllConnections();
    await new Promise((r) => jsonRpcPeer?.close(r));
    await new Promise((r) => grpcPeer?.close(r));
  });

  async function run(peer: string): Promise<WireTask> {
    const started = await ours.start(`hello ${peer}`, `call-${peer}`);
    return ours.waitFor(
      started["id"],
      (t) => ["completed", "failed", "canceled", "rejected"].includes(t["status"].state),
      "a final state",
    );
  }

  it("JSON-RPC over undici: the peer's connection presents its client certificate, and the call completes", async () => {
    const done = await run("mtls");
    expect(done["status"].state, JSON.stringify(done["metadata"])).toBe("completed");
    expect(clients.length).toBeGreaterThanOrEqual(1); // the send (the task completed at once)
    expect(new Set(clients)).toEqual(new Set(["caller"]));
    const stored = JSON.stringify(await caller.store.get(done["id"] as string));
    expect(stored).not.toContain(keyPem.split("\n")[1]!);
  });

  it("a certificate from another CA is refused by the peer: the node fails with a connection reason, retried", async () => {
    const before = clients.length;
    const failed = await run("intruder");
    expect(failed["status"].state).toBe("failed");
    const error = failed["metadata"]["openwop"]["error"];
    expect(error.message).toMatch(/cannot reach https:\/\/127\.0\.0\.1:\d+|TLS error/);
    expect(error.message).toMatch(/failed 2 times/);
    expect(clients.length).toBe(before);
  });

  it("gRPC over connect-node HTTP/2: the session presents the client certificate (the peer's answer comes back)", async () => {
    const failed = await run("grpc-mtls");
    // The endpoint answers every call UNIMPLEMENTED: reaching it at all needed the handshake with our certificate.
    const error = failed["metadata"]["openwop"]["error"];
    expect(error.message).toContain("gRPC status UNIMPLEMENTED");
    expect(grpcClients).toContain("caller");
    const before = grpcClients.length;
    const refused = await run("grpc-intruder");
    expect(refused["metadata"]["openwop"]["error"].message).not.toContain("UNIMPLEMENTED");
    expect(grpcClients.length).toBe(before);
  });

  it("credentials.mtls problems stop the start, naming the file and the reason, never the key", async () => {
    const other = makeCa(dir, "third-ca").sign("someone", "extendedKeyUsage=clientAuth");
    let thrown: unknown;
    try {
      loadConfig({
        A2A_PEERS: JSON.stringify({
          mismatched: {
            url: "https://p.example/a2a",
            binding: "jsonrpc",
            protocolVersion: "1.0",
            credentials: { mtls: { certFile: good.cert, keyFile: other.key } },
          },
          missing: {
            url: "https://p.example/a2a",
            binding: "jsonrpc",
            protocolVersion: "1.0",
            credentials: { mtls: { certFile: join(dir, "nope.pem"), keyFile: good.key } },
          },
          swapped: {
            url: "https://p.example/a2a",
            binding: "jsonrpc",
            protocolVersion: "1.0",
            credentials: { mtls: { certFile: good.key, keyFile: good.cert } },
          },
        }),
      });
    } catch (err) {
      thrown = err;
    }
    const message = (thrown as Error).message;
    expect(message).toContain(
      'peer "mismatched": credentials.mtls: keyFile is not the private key of certFile\'s certificate',
    );
    expect(message).toContain(
      `peer "missing": credentials.mtls: certFile ${join(dir, "nope.pem")} cannot be read (ENOENT)`,
    );
    expect(message).toContain(
      `peer "swapped": credentials.mtls: certFile ${good.key} is not PEM (the client certificate)`,
    );
    expect(message).not.toContain(keyPem.split("\n")[1]!);
  });
});
