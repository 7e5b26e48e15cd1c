// Peers with OAuth2 client credentials (RFC 6749 §4.4): the caller host fetches an access token from a token
// endpoint on loopback and calls a second host (the OAuth2-protected peer, which takes only the token it was
// given as its API key) with it. The token is cached until 60 s before expiry, fetched again once on a 401, and a
// token endpoint that is down or refuses the client fails the node with a clear, retried reason. The client
// secret and the tokens reach no answer, record or log line.
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createH2cServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { jsonRpcCaller, type WireTask } from "../support/jsonrpc-caller.js";
import { freePort, TEST_BUILTIN_WORKFLOWS } from "../support/server-process.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const SECRET = `client-secret-${randomBytes(12).toString("hex")}`;
const GOOD = `token-good-${randomBytes(12).toString("hex")}`;
const STALE = `token-stale-${randomBytes(12).toString("hex")}`;
const ALL = ["runs:create", "runs:read", "runs:cancel", "approvals:respond", "webhooks:manage", "manifest:read"];

interface TokenRequest {
  clientId: string;
  secret: string;
  form: URLSearchParams;
}

/** The token endpoint: Basic client auth; per client id, the tokens it hands out in turn (the last one repeats). */
function tokenEndpoint(tokens: Record<string, { values: string[]; expiresIn?: number }>, seen: TokenRequest[]): Server {
  return createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const basic = Buffer.from(String(req.headers["authorization"] ?? "").replace(/^Basic /, ""), "base64").toString(
        "utf8",
      );
      const [id = "", secret = ""] = basic.split(":").map((p) => decodeURIComponent(p.replace(/\+/g, " ")));
      const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
      seen.push({ clientId: id, secret, form });
      const client = tokens[id];
      if (
        !client ||
        secret !== SECRET ||
        form.get("grant_type") !== "client_credentials" ||
        req.headers["content-type"] !== "application/x-www-form-urlencoded"
      ) {
        // A careless endpoint that quotes the secret it was sent: it must not reach the node's failure.
        res
          .writeHead(401, { "content-type": "application/json" })
          .end(JSON.stringify({ error: "invalid_client", error_description: `unknown client ${id}:${secret}` }));
        return;
      }
      const value = client.values.length > 1 ? client.values.shift()! : client.values[0]!;
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          access_token: value,
          token_type: "Bearer",
          ...(client.expiresIn !== undefined ? { expires_in: client.expiresIn } : {}),
        }),
      );
    });
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("a2a.invoke to a peer with OAuth2 client credentials", () => {
  let peerHost: TestApp;
  let caller: App;
  let store: MemoryTaskStore;
  const lines: string[] = [];
  const servers: Server[] = [];
  const seen: TokenRequest[] = [];
  const started: string[] = [];
  /** The Authorization headers the gRPC peer got. */
  const grpcAuth: string[] = [];
  let grpcPeer: Http2Server;
  let callerUrl = "";
  const ours = jsonRpcCaller(() => callerUrl, { blocking: false });

  beforeAll(async () => {
    // The protected peer: a second host that takes GOOD (and nothing else) as its bearer key.
    peerHost = await startTestApp({
      API_KEYS: JSON.stringify([{ id: "caller", tenant: "acme", scopes: ALL, key: GOOD }]),
    });
    const endpoint = tokenEndpoint(
      {
        steady: { values: [GOOD], expiresIn: 3600 },
        rotating: { values: [STALE, GOOD], expiresIn: 3600 },
        short: { values: [GOOD], expiresIn: 30 },
        "rotating-grpc": { values: [STALE, GOOD], expiresIn: 3600 },
      },
      seen,
    );
    servers.push(endpoint);
    const tokens = await listen(endpoint);
    // A gRPC peer (h2c on loopback) that takes only GOOD: UNAUTHENTICATED otherwise; with GOOD every call is
    // UNIMPLEMENTED, which is enough to see which token got through.
    grpcPeer = createH2cServer();
    grpcPeer.on("stream", (stream, headers) => {
      grpcAuth.push(String(headers["authorization"]));
      const ok = headers["authorization"] === `Bearer ${GOOD}`;
      stream.respond(
        {
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": ok ? "12" : "16",
          "grpc-message": ok ? "nothing here" : "bad token",
        },
        { endStream: true },
      );
    });
    await new Promise<void>((r) => grpcPeer.listen(0, "127.0.0.1", r));
    const grpcUrl = `http://127.0.0.1:${(grpcPeer.address() as AddressInfo).port}`;
    const down = createServer();
    const downUrl = await listen(down);
    await new Promise((r) => down.close(r)); // nothing listens there any more
    const peer = (clientId: string, tokenUrl = `${tokens}/oauth/token`) => ({
      url: `${peerHost.baseUrl}/a2a/jsonrpc`,
      binding: "jsonrpc",
      protocolVersion: "0.3",
      credentials: {
        oauth2: {
          tokenUrl,
          clientId,
          clientSecret: SECRET,
          scopes: ["a2a.call", "tasks.read"],
          audience: "https://peer.example",
        },
      },
    });
    const peers = {
      steady: peer("steady"),
      rotating: peer("rotating"),
      short: peer("short"),
      refused: peer("refused"),
      down: peer("steady", `${downUrl}/oauth/token`),
      "rotating-grpc": { ...peer("rotating-grpc"), url: grpcUrl, binding: "grpc", protocolVersion: "1.0" },
    };
    const dir = await mkdtemp(join(tmpdir(), "peer-oauth2-"));
    for (const name of Object.keys(peers)) {
      await writeFile(
        join(dir, `call-${name}.json`),
        JSON.stringify({
          id: `call-${name}`,
          name: `Call ${name}`,
          description: `Calls ${name}.`,
          nodes: [{ kind: "a2a.invoke", id: "call", peer: name, skillId: "echo" }],
        }),
      );
    }
    const port = await freePort();
    callerUrl = `http://127.0.0.1:${port}`;
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: callerUrl,
      LOG_LEVEL: "debug",
      TIMER_POLL_MS: "50",
      SHUTDOWN_GRACE_MS: "1000",
      BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
      WORKFLOWS_DIR: dir,
      A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true",
      A2A_PEER_POLL_MS: "25",
      A2A_PEER_RETRY_BASE_MS: "20",
      A2A_PEER_RETRY_MAX_MS: "40",
      A2A_PEER_MAX_ATTEMPTS: "2",
      A2A_PEER_REQUEST_TIMEOUT_MS: "3000",
      A2A_PEERS: JSON.stringify(peers),
    });
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    store = new MemoryTaskStore();
    caller = await createApp({ config, logger: createLogger(config.logLevel, sink), store, durableStore: false });
    await caller.listen();
  });

  afterAll(async () => {
    await caller?.close();
    await peerHost?.close();
    for (const s of servers) await new Promise((r) => s.close(r));
    await new Promise((r) => grpcPeer?.close(r));
  });

  async function run(peer: string, text = `hello ${peer}`): Promise<WireTask> {
    const task = await ours.start(text, `call-${peer}`);
    started.push(task["id"] as string);
    return ours.waitFor(
      task["id"],
      (t) => ["completed", "failed", "canceled", "rejected"].includes(t["status"].state),
      "a final state",
    );
  }
  const fetchesBy = (clientId: string) => seen.filter((r) => r.clientId === clientId);

  it("fetches a token (Basic client auth, grant_type, scope, audience), calls the peer with it, and reuses it until near expiry", async () => {
    const first = await run("steady");
    expect(first["status"].state, JSON.stringify(first["metadata"])).toBe("completed");
    const second = await run("steady");
    expect(second["status"].state).toBe("completed");
    // Two whole calls (each a send and polls) on one token.
    expect(fetchesBy("steady")).toHaveLength(1);
    const [request] = fetchesBy("steady");
    expect(request!.secret).toBe(SECRET);
    expect(request!.form.get("grant_type")).toBe("client_credentials");
    expect(request!.form.get("scope")).toBe("a2a.call tasks.read");
    expect(request!.form.get("audience")).toBe("https://peer.example");
  });

  it("a token that expires within the 60 s margin is fetched again for the next request", async () => {
    const done = await run("short");
    expect(done["status"].state).toBe("completed");
    // The send and at least one poll: each found the token already due for renewal.
    expect(fetchesBy("short").length).toBeGreaterThanOrEqual(2);
  });

  it("a token the peer refuses (401) is fetched again once and the call made once more", async () => {
    const done = await run("rotating");
    expect(done["status"].state, JSON.stringify(done["metadata"])).toBe("completed");
    expect(fetchesBy("rotating")).toHaveLength(2);
  });

  it("over gRPC too: UNAUTHENTICATED to a token fetches a new one once and the call is made again with it", async () => {
    const failed = await run("rotating-grpc");
    // GOOD got through: the peer's own answer (UNIMPLEMENTED), not UNAUTHENTICATED.
    expect(failed["metadata"]["openwop"]["error"].message).toContain("gRPC status UNIMPLEMENTED");
    expect(grpcAuth.slice(0, 2)).toEqual([`Bearer ${STALE}`, `Bearer ${GOOD}`]);
    expect(fetchesBy("rotating-grpc")).toHaveLength(2);
  });

  it("a token endpoint that refuses the client fails the node with a clear, retried reason, the secret not quoted", async () => {
    const failed = await run("refused");
    expect(failed["status"].state).toBe("failed");
    const error = failed["metadata"]["openwop"]["error"];
    expect(error.code).toBe("external_call_failed");
    expect(error.message).toContain('the OAuth2 token endpoint for peer "refused"');
    expect(error.message).toContain("answered HTTP 401 (refused the client): invalid_client");
    // Retryable: A2A_PEER_MAX_ATTEMPTS (2) were made.
    expect(error.message).toMatch(/failed 2 times/);
    expect(fetchesBy("refused")).toHaveLength(2);
  });

  it("a token endpoint that is down fails the node with a clear, retried reason", async () => {
    const failed = await run("down");
    expect(failed["status"].state).toBe("failed");
    const error = failed["metadata"]["openwop"]["error"];
    expect(error.message).toContain('the OAuth2 token endpoint for peer "down"');
    expect(error.message).toContain("could not be asked for a token: cannot reach http://127.0.0.1:");
    expect(error.message).toMatch(/failed 2 times/);
  });

  it("the client secret and the tokens appear in no answer, task record, event or log line", async () => {
    expect(lines.join("")).toMatch(/a2a\.invoke/);
    const everything = [lines.join("")];
    for (const id of started) {
      everything.push(
        JSON.stringify(await store.get(id)),
        JSON.stringify(await store.readEvents(id, 0)),
        JSON.stringify(await ours.get(id)),
      );
    }
    expect(started.length).toBeGreaterThanOrEqual(5);
    for (const text of everything) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(GOOD);
      expect(text).not.toContain(STALE);
    }
  });

  it("A2A_PEERS oauth2 problems name the field, never the secret", () => {
    let thrown: unknown;
    try {
      loadConfig({
        A2A_PEERS: JSON.stringify({
          p: {
            url: "https://p.example/a2a",
            binding: "jsonrpc",
            protocolVersion: "1.0",
            credentials: {
              oauth2: { tokenUrl: "ftp://x", clientId: "", clientSecret: SECRET, scopes: ["a b"], extra: 1 },
            },
          },
        }),
      });
    } catch (err) {
      thrown = err;
    }
    const message = (thrown as Error).message;
    expect(message).toContain("credentials.oauth2: tokenUrl must be an absolute http(s) URL");
    expect(message).toContain("credentials.oauth2: clientId must be a non-empty single-line string");
    expect(message).toContain("credentials.oauth2: scopes must be a list of scope names");
    expect(message).toContain('credentials.oauth2: unknown field "extra"');
    expect(message).not.toContain(SECRET);
  });
});
