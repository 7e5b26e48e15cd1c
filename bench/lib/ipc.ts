// The bench's process tree: every server, the store server and the load generator run as their own child
// process (Node + tsx), so each one's CPU time and RSS are its own. Parent and child talk over Node's IPC
// channel: the parent calls a named handler, the child answers with its result.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const ROOT = join(import.meta.dirname, "..", "..");

interface Request {
  id: number;
  type: string;
  args: unknown;
}
type Reply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };
type Handler = (args: never) => unknown;

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across the bench's processes. */
export const wallNow = () => performance.timeOrigin + performance.now();

export interface Usage {
  cpuMs: number;
  rssBytes: number;
}

/** CPU (user + system) and RSS of the calling process. */
export function selfUsage(): Usage {
  const cpu = process.cpuUsage();
  return { cpuMs: (cpu.user + cpu.system) / 1000, rssBytes: process.memoryUsage.rss() };
}

/** Child side: answers the parent's calls; `stats` and `gc` are always there. Tells the parent it is ready. */
export function serveIpc(handlers: Record<string, Handler>, ready: Record<string, unknown>): void {
  const all: Record<string, Handler> = {
    stats: () => selfUsage(),
    // Children run with --expose-gc, so RSS can be read after a full collection.
    gc: () => {
      (globalThis as { gc?: () => void }).gc?.();
      return selfUsage();
    },
    ...handlers,
  };
  process.on("message", (raw: Request) => {
    void (async () => {
      const reply: Reply = await Promise.resolve()
        .then(() => {
          const handler = all[raw.type];
          if (!handler) throw new Error(`no handler "${raw.type}"`);
          return handler(raw.args as never);
        })
        .then(
          (result) => ({ id: raw.id, ok: true as const, result }),
          (err: unknown) => ({
            id: raw.id,
            ok: false as const,
            error: err instanceof Error ? (err.stack ?? err.message) : String(err),
          }),
        );
      process.send?.(reply);
    })();
  });
  // The parent going away (Ctrl-C, crash) ends the child: nothing outlives the run.
  process.on("disconnect", () => process.exit(0));
  process.send?.({ ready });
}

export interface BenchChild {
  readonly pid: number;
  readonly ready: Record<string, unknown>;
  call<T>(type: string, args?: unknown): Promise<T>;
  stop(): Promise<void>;
}

export interface ChildOptions {
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  nodeArgs?: string[];
}

/** Spawns `node --import tsx <script>` with an IPC channel and waits for its ready message. */
export async function spawnChild(name: string, script: string, options: ChildOptions = {}): Promise<BenchChild> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const child = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), "--import", "tsx", "--expose-gc", join(ROOT, script)],
    {
      cwd: ROOT,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    },
  );
  let log = "";
  const keep = (d: Buffer) => (log = (log + d.toString()).slice(-8000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then((code) => {
    for (const p of pending.values()) p.reject(new Error(`${name} exited (${code}):\n${log}`));
    pending.clear();
  });
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${name} did not start within ${readyTimeoutMs / 1000} s:\n${log}`)),
      readyTimeoutMs,
    );
    child.on(
      "message",
      (msg: { ready?: Record<string, unknown>; id?: number; ok?: boolean; result?: unknown; error?: string }) => {
        if (msg.ready) {
          clearTimeout(timer);
          resolve(msg.ready);
          return;
        }
        const waiter = pending.get(msg.id!);
        if (!waiter) return;
        pending.delete(msg.id!);
        if (msg.ok) waiter.resolve(msg.result);
        else waiter.reject(new Error(`${name}: ${msg.error}`));
      },
    );
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before it was ready:\n${log}`));
    });
  });
  return {
    pid: child.pid!,
    ready,
    call<T>(type: string, args?: unknown): Promise<T> {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, type, args } satisfies Request);
      });
    },
    stop: () => stopProcess(child, exited),
  };
}

/** SIGTERM, then SIGKILL after 5 s. */
async function stopProcess(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) of any process of ours, from /proc/<pid>/stat (Linux). */
export function procCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start after the last ')'; utime, stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** Resident set size of any process of ours, from /proc/<pid>/status (Linux). */
export function procRssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(match?.[1] ?? Number.NaN) * 1024;
}
