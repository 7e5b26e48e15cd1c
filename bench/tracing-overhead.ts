/**
 * Benchmark: the cost of OpenTelemetry tracing, on versus off, for JSON-RPC `message/send` (echo skill,
 * blocking) over real HTTP on loopback, through the whole app (request observer, store decorator, metrics).
 *
 *   npx tsx bench/tracing-overhead.ts [requests] [concurrency] [rounds]
 *
 * Method: each round is a fresh child process per mode, alternating off, on, off, on… so that drift of a
 * shared machine hits both modes alike. "off" is the default (no OTEL_EXPORTER_OTLP_ENDPOINT: no tracer, no
 * span, no context manager); "on" exports every span over OTLP/HTTP to a loopback receiver that accepts and
 * discards. Each child warms up with 10 % of the requests, then measures. We report the median throughput
 * per mode and the spread (min–max) of the off rounds: tracing off costs nothing measurable when the
 * on/off gap of "off" rounds among themselves (the noise) is as large as anything attributed to it; the
 * "on" overhead is the gap between the medians. Results go to bench/results/tracing-overhead.json.
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { createLogger } from "../src/observability/logger.js";
import { createTelemetry } from "../src/observability/telemetry.js";
import { MemoryTaskStore } from "../src/store/memory-task-store.js";

const isChild = process.argv[2] === "--child";
/** Driver: [requests] [concurrency] [rounds]; child: --child <mode> <requests> <concurrency>. */
const args = isChild ? process.argv.slice(4) : process.argv.slice(2);
const requests = Number(args[0] ?? 1000);
const concurrency = Number(args[1] ?? 16);
const rounds = Number(args[2] ?? 3);

async function child(mode: "on" | "off"): Promise<void> {
  let spans = 0;
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      spans++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const env =
    mode === "on"
      ? {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
          OTEL_BSP_SCHEDULE_DELAY: "200",
        }
      : {};
  const telemetry = await createTelemetry({ env });
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    STORE: "memory",
    PUSH_ENABLED: "false",
  });
  const app = await createApp({
    config,
    logger: createLogger("silent"),
    store: new MemoryTaskStore(),
    durableStore: false,
    telemetry,
  });
  const { port } = await app.listen();
  const send = async (): Promise<void> => {
    const res = await fetch(`http://127.0.0.1:${port}/a2a/jsonrpc`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "message/send",
        params: {
          message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hi" }] },
        },
      }),
    });
    const body = (await res.json()) as { result?: { status: { state: string } } };
    if (body.result?.status.state !== "completed") throw new Error(`unexpected answer: ${JSON.stringify(body)}`);
  };
  const run = async (count: number): Promise<number> => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next++ < count) await send();
      }),
    );
    return performance.now() - started;
  };
  await run(Math.ceil(requests / 10));
  const ms = await run(requests);
  await app.close();
  await telemetry.shutdown();
  sink.close();
  process.stdout.write(
    JSON.stringify({ mode, requests, ms, perSecond: (requests / ms) * 1000, exportBatches: spans }) + "\n",
  );
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function driver(): Promise<void> {
  const results: Array<{ mode: string; perSecond: number; exportBatches: number }> = [];
  for (let round = 0; round < rounds; round++) {
    for (const mode of ["off", "on"] as const) {
      const out = spawnSync(
        process.execPath,
        [...process.execArgv, import.meta.filename, "--child", mode, String(requests), String(concurrency)],
        { encoding: "utf8" },
      );
      if (out.status !== 0) throw new Error(`child ${mode} failed: ${out.stderr}`);
      const result = JSON.parse(out.stdout.trim().split("\n").at(-1)!) as {
        mode: string;
        perSecond: number;
        exportBatches: number;
      };
      console.log(
        `round ${round + 1} ${mode}: ${result.perSecond.toFixed(0)} sends/s${mode === "on" ? ` (${result.exportBatches} OTLP batches)` : ""}`,
      );
      results.push(result);
    }
  }
  const of = (mode: string) => results.filter((r) => r.mode === mode).map((r) => r.perSecond);
  const off = of("off");
  const on = of("on");
  const summary = {
    when: new Date().toISOString(),
    node: process.version,
    requests,
    concurrency,
    rounds,
    offMedianPerSecond: Math.round(median(off)),
    offSpreadPercent: Math.round(((Math.max(...off) - Math.min(...off)) / median(off)) * 1000) / 10,
    onMedianPerSecond: Math.round(median(on)),
    onOverheadPercent: Math.round(((median(off) - median(on)) / median(off)) * 1000) / 10,
    rounds_: results,
  };
  console.log(
    `off: median ${summary.offMedianPerSecond}/s (spread between off rounds ${summary.offSpreadPercent} %); on: median ${summary.onMedianPerSecond}/s (${summary.onOverheadPercent} % slower than off)`,
  );
  await writeFile(
    join(import.meta.dirname, "results", "tracing-overhead.json"),
    JSON.stringify(summary, null, 2) + "\n",
  );
}

if (isChild) {
  await child(process.argv[3] as "on" | "off");
} else {
  await driver();
}
