// Postgres for the reference's durable row: a throw-away cluster in a temporary directory on a free loopback
// port, default durability (fsync on, synchronous_commit on), its tables made by the SDK's own `a2a-db upgrade`
// as a user would, and removed at the end. Postgres refuses to run as root, so as root it runs as the
// `postgres` user (Debian's package creates it), else as `nobody`.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chown, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { ROOT } from "./ipc.js";

export interface PostgresServer {
  url: string;
  description: string;
  stop(): Promise<void>;
}

/** The directory holding initdb, postgres and pg_ctl: Debian's newest, else the PATH's; undefined if none. */
function findBinDir(): string | undefined {
  const has = (dir: string) => ["initdb", "postgres", "pg_ctl", "pg_isready"].every((b) => existsSync(join(dir, b)));
  const debian = "/usr/lib/postgresql";
  const versions = existsSync(debian)
    ? readdirSync(debian)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const candidates = [
    ...versions.map((v) => join(debian, v, "bin")),
    ...(process.env["PATH"] ?? "").split(delimiter).filter(Boolean),
  ];
  return candidates.find(has);
}

function run(file: string, args: string[]): { ok: boolean; output: string } {
  const result = spawnSync(file, args, { encoding: "utf8" });
  return {
    ok: result.status === 0,
    output: `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? String(result.error) : ""}`.trim(),
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts the cluster, or answers why it cannot (a sentence for the "skipped" line). */
export async function startPostgres(): Promise<PostgresServer | string> {
  const bin = findBinDir();
  if (!bin)
    return "no Postgres binaries (initdb, postgres, pg_ctl, pg_isready) under /usr/lib/postgresql/*/bin or on PATH, install postgresql";
  const isRoot = process.getuid?.() === 0;
  const user = !isRoot ? undefined : run("id", ["-u", "postgres"]).ok ? "postgres" : "nobody";
  // As root every Postgres command runs as `user`; runuser comes with util-linux.
  const as = (cmd: string, args: string[]): [string, string[]] =>
    user ? ["runuser", ["-u", user, "--", join(bin, cmd), ...args]] : [join(bin, cmd), args];
  const dir = await mkdtemp(join(tmpdir(), "openwop-bench-pg-"));
  const data = join(dir, "data");
  let postgres: ChildProcess | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  const cleanUp = async () => {
    if (postgres && postgres.exitCode === null && postgres.signalCode === null) {
      run(...as("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "30", "stop"]));
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    if (user) {
      const ids = [run("id", ["-u", user]).output, run("id", ["-g", user]).output].map(Number);
      await chown(dir, ids[0]!, ids[1]!);
    }
    const init = run(...as("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"]));
    if (!init.ok) throw new Error(`initdb failed: ${init.output.slice(-2000)}`);
    const port = await freePort();
    // In the foreground, as our child: Ctrl-C on the bench reaches it too (its process group), so no cluster
    // outlives the run. Durability settings are left at their defaults.
    const [file, args] = as("postgres", [
      "-D",
      data,
      "-p",
      String(port),
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      `unix_socket_directories=${dir}`,
    ]);
    postgres = spawn(file, args, { stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    postgres.stderr!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    exited = new Promise((resolve) => postgres!.once("exit", resolve));
    const deadline = Date.now() + 60_000;
    while (!run(join(bin, "pg_isready"), ["-q", "-h", "127.0.0.1", "-p", String(port)]).ok) {
      if (postgres.exitCode !== null || Date.now() > deadline) throw new Error(`postgres did not start: ${log}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
    // The SDK's CLI, as its README tells a user to run it: creates the task (and push config) tables.
    const upgrade = run(process.execPath, [
      join(ROOT, "node_modules", "@a2a-js", "sdk", "dist", "cli", "a2a_db.js"),
      "upgrade",
      "--url",
      url,
    ]);
    if (!upgrade.ok) throw new Error(`a2a-db upgrade failed: ${upgrade.output}`);
    const version = run(join(bin, "postgres"), ["--version"]).output;
    return {
      url,
      description: `${version}, a fresh cluster in ${dir} (default durability), tables by a2a-db upgrade`,
      stop: cleanUp,
    };
  } catch (err) {
    await cleanUp();
    return err instanceof Error ? err.message : String(err);
  }
}
