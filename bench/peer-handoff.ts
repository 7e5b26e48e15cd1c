// Peer handoff latency: from the peer's terminal commit to our run's next node, when an a2a.invoke node learns by
// push, by stream or by polling (see bench/README.md "Peer handoff"). Two hosts of ours in this process on
// loopback, A2A 1.0 JSON-RPC with an API key; the peer (MongoDB: the bench store) behind a counting proxy.
//   npx tsx bench/peer-handoff.ts [--samples 20] [--poll-ms 1000]      (or: npm run bench -- peer-handoff)
// Writes bench/results/peer-handoff-<UTC time>.json when run on its own.
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { MongoClient } from "mongodb";
import { MongoTaskStore } from "../src/store/mongo-task-store.js";
import type { TaskHandler } from "../src/workflows/workflow-types.js";
import { startCountingProxy } from "../test/support/counting-proxy.js";
import { freePort } from "../test/support/server-process.js";
import { startTestApp, type TestApp } from "../test/support/start-server.js";
import { startStoreServer } from "./lib/store-server.js";
import { machine } from "./lib/summary.js";

export interface PeerHandoffSettings {
  samples: number;
  /** A2A_PEER_POLL_MS of the poll-only caller (the push and stream callers poll every 60 s). */
  pollMs: number;
}

type Path = "push" | "stream" | "poll";
const PATHS: Path[] = ["push", "stream", "poll"];
const KEY = "bench-peer-key-0123456789abcdef0123";

const gates = new Map<string, () => void>();
const held = new Map<string, Promise<void>>();
const gate = (text: string) => {
  if (!held.has(text)) held.set(text, new Promise<void>((resolve) => gates.set(text, resolve)));
  return held.get(text)!;
};
const nextNodeAt = new Map<string, number>();

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const round = (n: number) => Math.round(n * 10) / 10;

export async function runPeerHandoff(
  settings: PeerHandoffSettings,
  storeUri: string,
): Promise<{ figures: Record<string, unknown>; printed: string }> {
  const mongo = await MongoClient.connect(storeUri);
  const dbName = `handoff_${randomUUID().slice(0, 8)}`;
  const store = new MongoTaskStore(mongo, mongo.db(dbName));
  await store.init();
  const peerDir = await mkdtemp(join(tmpdir(), "peer-handoff-"));
  await writeFile(
    join(peerDir, "hold.json"),
    JSON.stringify({
      id: "hold",
      name: "Hold",
      description: "Works until released.",
      nodes: [{ kind: "task", id: "work", handler: "hold" }],
    }),
  );
  const callerDir = await mkdtemp(join(tmpdir(), "peer-handoff-caller-"));
  await writeFile(
    join(callerDir, "call-hold.json"),
    JSON.stringify({
      id: "call-hold",
      name: "Call hold",
      description: "a2a.invoke, then mark.",
      nodes: [
        { kind: "a2a.invoke", id: "call", peer: "peer", skillId: "hold" },
        { kind: "task", id: "after", handler: "mark" },
      ],
    }),
  );
  const peerHandlers: Record<string, TaskHandler> = {
    async hold(ctx) {
      await gate(ctx.input.text);
      return { output: { text: "done" }, artifacts: [{ name: "held", parts: [{ kind: "text", text: "done" }] }] };
    },
  };
  const callerHandlers: Record<string, TaskHandler> = {
    async mark(ctx) {
      nextNodeAt.set(ctx.taskId, Date.now());
      return { output: {} };
    },
  };
  const peerPort = await freePort();
  const proxy = await startCountingProxy(peerPort);
  const apps: TestApp[] = [];
  try {
    const peerHost = await startTestApp(
      {
        PORT: String(peerPort),
        PUBLIC_URL: proxy.url,
        WORKFLOWS_DIR: peerDir,
        API_KEYS: JSON.stringify([
          {
            id: "caller",
            tenant: "acme",
            scopes: ["runs:create", "runs:read", "runs:cancel", "webhooks:manage"],
            key: KEY,
          },
        ]),
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
      },
      store,
      peerHandlers,
    );
    apps.push(peerHost);
    const peers = JSON.stringify({
      peer: {
        cardUrl: `${proxy.url}/.well-known/agent-card.json`,
        binding: "jsonrpc",
        protocolVersion: "1.0",
        credentials: { bearer: KEY },
      },
    });
    const base = { A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS: "true", A2A_PEERS: peers, WORKFLOWS_DIR: callerDir };
    const envs: Record<Path, Record<string, string>> = {
      push: { ...base, A2A_PEER_POLL_MS: "60000" },
      stream: { ...base, A2A_PEER_POLL_MS: "60000", A2A_PEER_PUSH: "false" },
      poll: { ...base, A2A_PEER_POLL_MS: String(settings.pollMs), A2A_PEER_PUSH: "false", A2A_PEER_STREAM: "false" },
    };
    const figures: Record<string, unknown> = {};
    const lines: string[] = [];
    for (const path of PATHS) {
      const caller = await startTestApp(envs[path], undefined, callerHandlers);
      apps.push(caller);
      const rpc = async (method: string, params: unknown) => {
        const res = await fetch(`${caller.baseUrl}/a2a/jsonrpc`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params }),
        });
        return ((await res.json()) as { result: { id: string } }).result;
      };
      const handoffs: number[] = [];
      const getTaskWhileWorking: number[] = [];
      const getTaskAfterRelease: number[] = [];
      for (let i = 0; i < settings.samples; i++) {
        const text = `${path} ${i} ${randomUUID()}`;
        void gate(text);
        const started = await rpc("message/send", {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text }],
            metadata: { skillId: "call-hold" },
          },
          configuration: { blocking: false },
        });
        let peerTaskId: string | undefined;
        for (let t = 0; t < 500 && !peerTaskId; t++) {
          await new Promise((r) => setTimeout(r, 10));
          const progress = (await caller.store.readEvents(started["id"], 0)).find((e) => e.type === "node.progress");
          peerTaskId = (progress?.payload as { progress?: { peerTaskId?: string } } | undefined)?.progress?.peerTaskId;
        }
        if (!peerTaskId) throw new Error(`${path}: the peer's task id was never recorded`);
        proxy.reset();
        // The peer works a while (a stream is attached, a few polls happen on the poll path), then finishes.
        await new Promise((r) => setTimeout(r, 300));
        getTaskWhileWorking.push(proxy.count("GetTask"));
        proxy.reset();
        gates.get(text)!();
        for (let t = 0; t < 3000 && !nextNodeAt.has(started["id"]); t++) await new Promise((r) => setTimeout(r, 5));
        const markedAt = nextNodeAt.get(started["id"]);
        if (markedAt === undefined) throw new Error(`${path}: the run did not move on`);
        const peerRecord = await store.get(peerTaskId);
        handoffs.push(markedAt - Date.parse(peerRecord!.updatedAt));
        await new Promise((r) => setTimeout(r, 50));
        getTaskAfterRelease.push(proxy.count("GetTask"));
      }
      const figure = {
        samples: handoffs.length,
        handoffMs: {
          p50: round(percentile(handoffs, 50)),
          p99: round(percentile(handoffs, 99)),
          max: round(Math.max(...handoffs)),
        },
        getTaskWhileWorking300ms: {
          total: getTaskWhileWorking.reduce((a, b) => a + b, 0),
          perSample: round(getTaskWhileWorking.reduce((a, b) => a + b, 0) / handoffs.length),
        },
        getTaskAfterTerminal: {
          total: getTaskAfterRelease.reduce((a, b) => a + b, 0),
          perSample: round(getTaskAfterRelease.reduce((a, b) => a + b, 0) / handoffs.length),
        },
        pollMs: path === "poll" ? settings.pollMs : 60_000,
      };
      figures[path] = figure;
      lines.push(
        `${path.padEnd(6)} handoff p50 ${figure.handoffMs.p50} ms  p99 ${figure.handoffMs.p99} ms  max ${figure.handoffMs.max} ms  | GetTask while working (300 ms): ${figure.getTaskWhileWorking300ms.perSample}/sample, after terminal: ${figure.getTaskAfterTerminal.perSample}/sample  (poll ${figure.pollMs} ms)`,
      );
    }
    return { figures, printed: lines.join("\n") };
  } finally {
    for (const app of apps.reverse()) await app.close().catch(() => undefined);
    await proxy.close();
    await mongo
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await mongo.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: { samples: { type: "string", default: "20" }, "poll-ms": { type: "string", default: "1000" } },
  });
  const settings = { samples: Number(values.samples), pollMs: Number(values["poll-ms"]) };
  const server = await startStoreServer();
  try {
    console.log(`peer-handoff: ${JSON.stringify(settings)}; store: ${server.description}`);
    const { figures, printed } = await runPeerHandoff(settings, server.uri);
    console.log(`\n${printed}\n`);
    const dir = join(import.meta.dirname, "results");
    await mkdir(dir, { recursive: true });
    const file = join(dir, `peer-handoff-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    await writeFile(
      file,
      JSON.stringify(
        {
          benchmark: "peer handoff (a2a.invoke: push, stream, poll)",
          date: new Date().toISOString(),
          machine: machine(),
          store: server.description,
          settings,
          figures,
        },
        null,
        2,
      ) + "\n",
    );
    console.log(`wrote ${file}`);
  } finally {
    await server.stop();
  }
}
