// The tenant-limits bench (`npm run bench -- limits`; method: docs/performance.md "Tenant limits").
// (a) What a refusal costs: one server (in-memory store); a closed loop of callers that ignore Retry-After sends
//     the same call as a tenant without limits (served) and as one over its requestsPerSecond (refused, 429), and
//     the server's CPU per call is compared: JSON-RPC tasks/get and message/send, OpenWOP GET /v1/runs/{id}.
// (b) How exact the request rate is across instances: two servers on one database share a tenant's
//     requestsPerSecond (each takes 1/N, N the live instances from their beats); callers hammer both evenly, then
//     only one, and the calls admitted are compared with what the limit allows (rate × time + burst).
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { spawnChild, wallNow, type BenchChild } from "./lib/ipc.js";
import { dropDatabase, type StoreServer } from "./lib/store-server.js";
import { round2, table } from "./lib/summary.js";

export interface TenantLimitsBenchOptions {
  /** Seconds each refusal-cost case runs. */
  seconds: number;
  /** Callers at once. */
  concurrency: number;
  /** The shared rate of part (b), requests a second (its burst is the same number). */
  rate: number;
  /** Seconds each part (b) case runs. */
  rateSeconds: number;
}

const FREE = "bench-free-key-0123456789abcdef0123";
const HAMMER = "bench-hammer-key-0123456789abcdef0123";
const RATED = "bench-rated-key-0123456789abcdef0123";
const scopes = ["runs:create", "runs:read"];

type Call = (url: string, key: string) => Promise<number>;

const jsonRpc =
  (method: string, params: () => unknown): Call =>
  async (url, key) => {
    const res = await fetch(`${url}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: params() }),
    });
    await res.arrayBuffer();
    return res.status;
  };
const message = () => ({
  message: {
    kind: "message",
    role: "user",
    messageId: randomUUID(),
    parts: [{ kind: "text", text: "hi" }],
    metadata: { skillId: "echo" },
  },
});

/** Closed loop: `concurrency` callers, each calling again as soon as it is answered, for `ms`. */
async function hammer(ms: number, concurrency: number, call: (i: number) => Promise<number>) {
  const statuses = new Map<number, number>();
  const end = wallNow() + ms;
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (wallNow() < end) {
        const status = await call(i++).catch(() => -1);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  return statuses;
}

async function refusalCost(options: TenantLimitsBenchOptions) {
  const server = await spawnChild("our server (limits)", "bench/servers/our-server.ts", {
    env: {
      STORE: "memory",
      PORT: "0",
      BUILTIN_WORKFLOWS: "demo",
      API_KEYS: JSON.stringify([
        { id: "free", tenant: "free", scopes, key: FREE },
        { id: "hammer", tenant: "hammer", scopes, key: HAMMER },
      ]),
      TENANT_LIMITS: JSON.stringify({ keys: { hammer: { requestsPerSecond: 1, burst: 1 } } }),
      OVERLOAD_EVENT_LOOP_DELAY_MS: "0",
    },
  });
  const url = `http://127.0.0.1:${server.ready["port"] as number}`;
  try {
    const task = (
      (await await fetch(`${url}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${FREE}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: message() }),
      }).then((r) => r.json())) as { result: { id: string } }
    ).result.id;
    const cases: Array<[string, Call]> = [
      ["JSON-RPC tasks/get", jsonRpc("tasks/get", () => ({ id: task }))],
      ["JSON-RPC message/send (echo)", jsonRpc("message/send", message)],
      [
        "OpenWOP GET /v1/runs/{id}",
        async (u, key) => {
          const res = await fetch(`${u}/v1/runs/${task}`, { headers: { authorization: `Bearer ${key}` } });
          await res.arrayBuffer();
          return res.status;
        },
      ],
    ];
    const rows: Array<Record<string, unknown>> = [];
    for (const [label, call] of cases) {
      // Warm both paths, then measure each.
      await hammer(500, options.concurrency, () => call(url, FREE));
      await hammer(500, options.concurrency, () => call(url, HAMMER));
      for (const [who, key] of [
        ["served (no limit)", FREE],
        ["refused (over requestsPerSecond)", HAMMER],
      ] as const) {
        const before = await server.call<{ cpuMs: number }>("stats");
        const started = wallNow();
        const statuses = await hammer(options.seconds * 1000, options.concurrency, () => call(url, key));
        const seconds = (wallNow() - started) / 1000;
        const after = await server.call<{ cpuMs: number }>("stats");
        const calls = [...statuses.values()].reduce((a, b) => a + b, 0);
        rows.push({
          call: label,
          who,
          calls,
          perSecond: Math.round(calls / seconds),
          refused: statuses.get(429) ?? 0,
          serverCpuUsPerCall: round2(((after.cpuMs - before.cpuMs) * 1000) / calls),
        });
      }
    }
    return rows;
  } finally {
    await server.stop();
  }
}

async function sharedRate(options: TenantLimitsBenchOptions, store: StoreServer) {
  const db = `bench_limits_${randomUUID().slice(0, 8)}`;
  const servers: BenchChild[] = [];
  try {
    for (let i = 0; i < 2; i++)
      servers.push(
        await spawnChild(`our server (rate ${i})`, "bench/servers/our-server.ts", {
          env: {
            STORE: "mongodb",
            PORT: "0",
            MONGODB_URI: store.uri,
            MONGODB_DB: db,
            INSTANCE_ID: `limits-${i}`,
            BUILTIN_WORKFLOWS: "demo",
            BENCH_COUNT_COMMANDS: "0",
            LEASE_HEARTBEAT_MS: "250",
            LEASE_TTL_MS: "1000",
            API_KEYS: JSON.stringify([{ id: "rated", tenant: "rated", scopes, key: RATED }]),
            TENANT_LIMITS: JSON.stringify({
              tenants: { rated: { requestsPerSecond: options.rate, burst: options.rate } },
            }),
            OVERLOAD_EVENT_LOOP_DELAY_MS: "0",
          },
        }),
      );
    const urls = servers.map((s) => `http://127.0.0.1:${s.ready["port"] as number}`);
    // Both beat a few times, so each knows the other (its share is 1/2 from then on).
    await new Promise((r) => setTimeout(r, 1500));
    const get = jsonRpc("tasks/get", () => ({ id: randomUUID() }));
    const rows: Array<Record<string, unknown>> = [];
    for (const [label, pick] of [
      ["both instances, evenly", (i: number) => urls[i % 2]!],
      ["one instance only", () => urls[0]!],
    ] as const) {
      // A pause of a full burst's refill between cases: the buckets start full.
      await new Promise((r) => setTimeout(r, 1500));
      const started = wallNow();
      const statuses = await hammer(options.rateSeconds * 1000, options.concurrency, (i) => get(pick(i), RATED));
      const seconds = (wallNow() - started) / 1000;
      const admitted = statuses.get(200) ?? 0;
      const allowed = options.rate * seconds + options.rate;
      rows.push({
        case: label,
        seconds: round2(seconds),
        admitted,
        refused: statuses.get(429) ?? 0,
        allowed: Math.round(allowed),
        errorPercent: round2((100 * (admitted - allowed)) / allowed),
      });
    }
    return rows;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await dropDatabase(store.uri, db);
  }
}

export async function runTenantLimits(
  options: TenantLimitsBenchOptions,
  store: StoreServer,
): Promise<{ figures: Record<string, unknown>; printed: string }> {
  console.log("  (a) what a refusal costs…");
  const cost = await refusalCost(options);
  console.log("  (b) one requestsPerSecond shared by two instances…");
  const rate = await sharedRate(options, store);
  const printed = [
    table(
      ["call", "who", "calls/s", "refused", "server CPU µs / call"],
      cost.map((r) => [
        String(r["call"]),
        String(r["who"]),
        Number(r["perSecond"]),
        Number(r["refused"]),
        Number(r["serverCpuUsPerCall"]),
      ]),
    ),
    table(
      ["requests to", "admitted", "allowed (rate × s + burst)", "error %"],
      rate.map((r) => [String(r["case"]), Number(r["admitted"]), Number(r["allowed"]), Number(r["errorPercent"])]),
    ),
  ].join("\n\n");
  return { figures: { loadAverageAtEnd: loadavg().map(round2), refusalCost: cost, sharedRate: rate }, printed };
}
