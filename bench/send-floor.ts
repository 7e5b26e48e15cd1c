// The floor under the streams figure (d): how long one process takes to write one small frame to each of N
// open loopback TCP sockets, with nothing else to do (no HTTP, no JSON, no store), and when the last of them
// arrives in a reader process. Each round writes a 300-byte buffer (an SSE status update's size) to every
// socket in one loop, alternately with plain `socket.write` and corked (all written, then all uncorked);
// the reader (a child process, as the load generator is) notes when each socket's bytes arrive. Reported
// per round: the loop's wall time and our process's CPU (user, system), and the receipt latency p50/p99
// from the loop's start. Whatever our server does per stream comes on top of this.
//   npx tsx bench/send-floor.ts [sockets=1000] [rounds=10]
import { fork, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";
import { cpus } from "node:os";

const wallNow = (): number => performance.timeOrigin + performance.now();

if (process.argv[2] === "--reader") {
  // The reader: opens the sockets, notes the arrival time of each socket's first bytes after a round starts.
  const [port, count] = [Number(process.argv[3]), Number(process.argv[4])];
  let since = Infinity;
  const arrived: number[] = new Array<number>(count).fill(0);
  let open = 0;
  for (let i = 0; i < count; i++) {
    const socket = connect(port, "127.0.0.1", () => {
      if (++open === count) process.send?.({ ready: true });
    });
    socket.on("data", () => {
      const now = wallNow();
      if (now >= since && arrived[i] === 0) arrived[i] = now;
    });
  }
  process.on("message", (msg: { start?: number; report?: boolean }) => {
    if (msg.start !== undefined) {
      since = msg.start;
      arrived.fill(0);
      process.send?.({ armed: true });
    } else if (msg.report) process.send?.({ arrived });
  });
} else {
  const count = Number(process.argv[2] ?? 1000);
  const rounds = Number(process.argv[3] ?? 10);
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    socket.setNoDelay(true);
    sockets.push(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const reader: ChildProcess = fork(new URL(import.meta.url).pathname, ["--reader", String(port), String(count)], {
    execArgv: process.execArgv,
  });
  const next = <T>(key: string): Promise<T> =>
    new Promise((resolve) => {
      const on = (msg: Record<string, unknown>) => {
        if (key in msg) {
          reader.off("message", on);
          resolve(msg as T);
        }
      };
      reader.on("message", on);
    });
  await next("ready");
  while (sockets.length < count) await new Promise((r) => setTimeout(r, 10));
  const frame = Buffer.alloc(300, "a");
  const percentile = (sorted: number[], p: number): number =>
    sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
  const results: Array<Record<string, unknown>> = [];
  for (let round = 0; round < rounds; round++) {
    await new Promise((r) => setTimeout(r, 200));
    const mode = round % 2 === 0 ? "plain" : "corked";
    const start = wallNow();
    reader.send({ start });
    await next("armed");
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    if (mode === "plain") for (const s of sockets) s.write(frame);
    else {
      for (const s of sockets) {
        s.cork();
        s.write(frame);
      }
      for (const s of sockets) s.uncork();
    }
    const loopMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    await new Promise((r) => setTimeout(r, 300));
    reader.send({ report: true });
    const { arrived } = await next<{ arrived: number[] }>("arrived");
    const fromLoop = arrived
      .filter((t) => t > 0)
      .map((t) => t - (performance.timeOrigin + t0))
      .sort((a, b) => a - b);
    const row = {
      mode,
      loopMs: Math.round(loopMs * 100) / 100,
      userMs: Math.round(cpu.user / 10) / 100,
      systemMs: Math.round(cpu.system / 10) / 100,
      received: fromLoop.length,
      p50Ms: Math.round(percentile(fromLoop, 50) * 100) / 100,
      p99Ms: Math.round(percentile(fromLoop, 99) * 100) / 100,
    };
    results.push(row);
    console.log(JSON.stringify(row));
  }
  const file = `bench/results/send-floor-${new Date().toISOString().slice(0, 10)}.json`;
  writeFileSync(
    file,
    JSON.stringify(
      {
        benchmark: "one frame to each of N loopback sockets, nothing else",
        sockets: count,
        frameBytes: frame.length,
        machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
        rounds: results,
      },
      null,
      2,
    ) + "\n",
  );
  console.log(`wrote ${file}`);
  reader.kill();
  for (const s of sockets) s.destroy();
  server.close();
}
