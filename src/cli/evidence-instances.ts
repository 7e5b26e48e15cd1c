import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";

/** How to start one host process: this CLI's own entry by default (the build being witnessed). */
export interface HostCommand {
  file: string;
  args: string[];
}

/** One running host process of the witness: its per-boot incarnation token is its INSTANCE_ID. */
export interface Instance {
  /** Opaque, random per boot (never a pid): the incarnation token RFC 0158 asks `peer-resume` to record. */
  incarnation: string;
  baseUrl: string;
  child: ChildProcess;
  /** Resolves with the time (ms since the epoch) the process exited. */
  exited: Promise<number>;
  output(): string;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts one host process on a free loopback port with `env` (the deployment's settings, the witness
 * database) and a fresh incarnation, and waits until it listens. The process dies with SIGKILL only, as in a
 * crash: the witness never stops an instance any other way. With `mayDie`, a process that exits before it
 * listens is answered too (a restart that takes up poison work during its start-up dies there); without it,
 * that is an error.
 */
export async function startInstance(
  command: HostCommand,
  env: NodeJS.ProcessEnv,
  extra: Record<string, string> = {},
  mayDie = false,
): Promise<Instance> {
  const port = await freePort();
  const incarnation = `boot-${randomBytes(9).toString("base64url")}`;
  const child = spawn(command.file, command.args, {
    env: {
      ...env,
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      INSTANCE_ID: incarnation,
      LOG_LEVEL: "info",
      ...extra,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number>((resolve) => child.once("exit", () => resolve(Date.now())));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`a witness instance did not start within 30 s:\n${log.slice(-4000)}`));
    }, 30_000);
    child.stdout!.on("data", () => {
      if (log.includes("listening on")) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      if (mayDie) resolve();
      else reject(new Error(`a witness instance exited before listening:\n${log.slice(-4000)}`));
    });
  });
  return { incarnation, baseUrl: `http://127.0.0.1:${port}`, child, exited, output: () => log };
}

/** SIGKILL: no shutdown code runs. Resolves with the time the process was gone. */
export async function killInstance(instance: Instance): Promise<number> {
  if (instance.child.exitCode === null && instance.child.signalCode === null) instance.child.kill("SIGKILL");
  return instance.exited;
}
