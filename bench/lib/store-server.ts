// MongoDB for the bench: MONGODB_URI when set, else the wire-protocol test server in its own process, so its
// CPU is not counted as our server's (it is reported on its own, from /proc).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { freePort } from "../../test/support/server-process.js";
import { ROOT, stopProcess } from "./ipc.js";

export interface StoreServer {
  uri: string;
  description: string;
  /** The test server's pid (its CPU is read from /proc); undefined for MONGODB_URI. */
  pid?: number;
  stop(): Promise<void>;
}

export async function startStoreServer(): Promise<StoreServer> {
  const uri = process.env["MONGODB_URI"];
  if (uri) return { uri, description: "MongoDB at MONGODB_URI", stop: async () => {} };
  const port = await freePort();
  // The test server keeps every document in its heap: room for the 100 000 waiting tasks of the scale figures.
  const child = spawn(process.execPath, ["--max-old-space-size=8192", "--import", "tsx", join(ROOT, "test/support/mongo-wire-server/cli.ts"), "--port", String(port)], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let log = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the wire-protocol test server did not start:\n${log}`)), 60_000);
    child.stderr.on("data", (d: Buffer) => (log += d.toString()));
    child.stdout.on("data", (d: Buffer) => {
      log += d.toString();
      if (log.includes("listening on")) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => reject(new Error(`the wire-protocol test server exited:\n${log}`)));
  });
  return {
    uri: `mongodb://127.0.0.1:${port}`,
    description: "the wire-protocol test server (test/support/mongo-wire-server, its own process)",
    pid: child.pid!,
    stop: () => stopProcess(child, exited),
  };
}
