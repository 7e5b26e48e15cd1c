// Which MongoDB the tests talk to. In order of preference:
//   1. MONGODB_URI, when set (a real deployment the developer or CI provides);
//   2. a real mongod started by mongodb-memory-server, when its binary is available (cached,
//      MONGOMS_SYSTEM_BINARY) or can be downloaded quickly;
//   3. the in-process wire-protocol test server (./mongo-wire-server), which always works.
// The same tests run against all three; the wire server's own tests also run against the
// chosen backend to show it behaves like the real thing.

import net from "node:net";
import { randomBytes } from "node:crypto";
import { DryMongoBinary, MongoMemoryServer } from "mongodb-memory-server-core";
import { resolveConfig, ResolveConfigVariables, envToBool } from "mongodb-memory-server-core/lib/util/resolveConfig.js";
import { startMongoWireServer } from "./mongo-wire-server/server.js";

export type MongoBackend = "MONGODB_URI" | "mongodb-memory-server" | "wire-protocol test server";

export interface TestMongo {
  uri: string;
  backend: MongoBackend;
  stop(): Promise<void>;
}

declare module "vitest" {
  export interface ProvidedContext {
    mongoUri: string;
    mongoBackend: string;
  }
}

/** How long a real mongod may take to download and start before we fall back. */
const MEMORY_SERVER_TIMEOUT_MS = Number(process.env.OPENWOP_TEST_MONGOMS_TIMEOUT_MS ?? 15_000);
/** How long to wait for a TCP connection to the binary download host. */
const DOWNLOAD_PROBE_TIMEOUT_MS = 3_000;

export async function startTestMongo(log: (line: string) => void = () => {}): Promise<TestMongo> {
  const fromEnv = process.env.MONGODB_URI;
  if (fromEnv) return { uri: fromEnv, backend: "MONGODB_URI", stop: async () => {} };

  const memory = await tryMemoryServer();
  if ("uri" in memory) return memory;
  log(`mongodb-memory-server unavailable (${memory.reason}); using the wire-protocol test server`);

  const server = await startMongoWireServer({ port: 0 });
  return { uri: server.uri, backend: "wire-protocol test server", stop: () => server.close() };
}

async function tryMemoryServer(): Promise<TestMongo | { reason: string }> {
  try {
    const options = await DryMongoBinary.generateOptions();
    const binary = await DryMongoBinary.locateBinary(options);
    if (!binary) {
      // No local binary: MongoMemoryServer would download one. Without network that fails only
      // after DNS retries, so check first that the download host answers at all.
      if (!envToBool(resolveConfig(ResolveConfigVariables.RUNTIME_DOWNLOAD) ?? "true")) {
        return { reason: `no mongod ${options.version} binary found and MONGOMS_RUNTIME_DOWNLOAD is off` };
      }
      const host = downloadHost();
      if (!usesProxy() && !(await canConnect(host, 443, DOWNLOAD_PROBE_TIMEOUT_MS))) {
        return { reason: `no mongod ${options.version} binary found and ${host} is unreachable` };
      }
    }
    const server = await withTimeout(MongoMemoryServer.create(), MEMORY_SERVER_TIMEOUT_MS, (late) => void late.stop());
    return { uri: server.getUri(), backend: "mongodb-memory-server", stop: async () => void (await server.stop()) };
  } catch (error) {
    return { reason: error instanceof Error ? (error.message.split("\n")[0] ?? error.message) : String(error) };
  }
}

function downloadHost(): string {
  const url =
    resolveConfig(ResolveConfigVariables.DOWNLOAD_URL) ?? resolveConfig(ResolveConfigVariables.DOWNLOAD_MIRROR);
  if (url) {
    try {
      return new URL(url).hostname;
    } catch {
      // fall through to the default host
    }
  }
  return "fastdl.mongodb.org";
}

function usesProxy(): boolean {
  return ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"].some(
    (name) => !!process.env[name],
  );
}

function canConnect(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** Rejects after `ms`; a result that arrives later is handed to `onLate` (to clean it up). */
function withTimeout<T>(promise: Promise<T>, ms: number, onLate: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      reject(new Error(`did not start within ${ms} ms`));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        if (timedOut) onLate(value);
        else resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (!timedOut) reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

let dbCounter = 0;

/**
 * A database name no other test (or test run sharing the same server) uses: the prefix plus
 * the worker's pid, a counter and random bytes, within MongoDB's 63-byte limit.
 */
export function testDbName(prefix: string): string {
  const cleaned = prefix.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 32) || "test";
  dbCounter++;
  return `${cleaned}_${process.pid}_${dbCounter}_${randomBytes(3).toString("hex")}`;
}

/** The URI without user:password, for logs. */
export function redactUri(uri: string): string {
  return uri.replace(/^(mongodb(?:\+srv)?:\/\/)[^@/]*@/, "$1");
}
