import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");
/** The process entry of `npm start`. */
export const HOST_MAIN = join(root, "src", "main.ts");
/** A HANDLERS_MODULE with a `record-effect` handler that writes each execution to EFFECTS_COLLECTION. */
export const EFFECT_RECORDING_HANDLERS = join(root, "test", "support", "effect-recording-handlers.ts");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  baseUrl: string;
  port: number;
  child: ChildProcess;
  output: () => string;
  /** SIGKILL: no shutdown code runs, as in a crash. */
  kill(): Promise<void>;
  /** SIGTERM: the graceful path. Resolves with the exit code. */
  terminate(): Promise<number | null>;
}

/** The built-in sets the test helpers load unless a test sets BUILTIN_WORKFLOWS itself (the product's default is `demo`, or none with WORKFLOWS_DIR). */
export const TEST_BUILTIN_WORKFLOWS = "demo,conformance";

/** Runs the real server (`src/main.ts`, or another entry) as its own process, the way `npm start` does, and waits until it listens. */
export async function startServerProcess(
  env: Record<string, string>,
  port?: number,
  entry = HOST_MAIN,
): Promise<ServerProcess> {
  const chosen = port ?? (await freePort());
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(chosen),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${chosen}`,
      LOG_LEVEL: "info",
      BUILTIN_WORKFLOWS: TEST_BUILTIN_WORKFLOWS,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 30 s:\n${log}`)), 30_000);
    const check = () => {
      if (log.includes("listening on")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${log}`));
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${chosen}`,
    port: chosen,
    child,
    output: () => log,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async terminate() {
      child.kill("SIGTERM");
      return exited;
    },
  };
}
