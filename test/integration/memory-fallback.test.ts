// STORE=auto with no MongoDB: the host falls back to the in-memory store, and says so loudly — a block of
// warning lines at start with the one-command local store, a start-up line that says "not durable", and the
// same warning on /readyz. No MongoDB is made unavailable by a mock: the embedded mongod is pointed at a binary
// that does not exist (MONGOMS_SYSTEM_BINARY, mongodb-memory-server's own setting), so it cannot start.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { launchHost, type RunningHost } from "../../src/start-host.js";
import { LOCAL_MONGO_COMMAND, LOCAL_MONGO_URI } from "../../src/store/memory-fallback.js";

interface LogLine {
  level: number;
  msg: string;
  store?: string;
  durable?: boolean;
}

describe("the in-memory fallback is loud", () => {
  const lines: LogLine[] = [];
  let host: RunningHost | undefined;
  const saved = process.env["MONGOMS_SYSTEM_BINARY"];

  beforeAll(async () => {
    process.env["MONGOMS_SYSTEM_BINARY"] = "/nonexistent/openwop-test/mongod";
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const text of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(text) as LogLine);
        done();
      },
    });
    const env = {
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      DATA_DIR: await mkdtemp(join(tmpdir(), "openwop-fallback-")),
    };
    host = await launchHost({}, env, createLogger("info", sink));
  });
  afterAll(async () => {
    await host?.close();
    if (saved === undefined) delete process.env["MONGOMS_SYSTEM_BINARY"];
    else process.env["MONGOMS_SYSTEM_BINARY"] = saved;
  });

  it("warns at start in a block of lines naming the one-command local store, before the start-up line says not durable", () => {
    const warnings = lines.filter((l) => l.level === 40 && l.durable === false);
    expect(warnings.length).toBeGreaterThanOrEqual(5);
    expect(warnings.every((l) => l.msg.startsWith("NOT DURABLE:") && l.store === "memory")).toBe(true);
    const text = warnings.map((l) => l.msg).join("\n");
    expect(text).toContain("IN-MEMORY store");
    expect(text).toContain("/nonexistent/openwop-test/mongod"); // why: the reason the embedded mongod could not start
    expect(text).toContain(LOCAL_MONGO_COMMAND);
    expect(text).toContain(`MONGODB_URI=${LOCAL_MONGO_URI}`);
    const started = lines.findIndex((l) => l.msg.startsWith("openwop-a2a-host listening on"));
    expect(started).toBeGreaterThan(lines.indexOf(warnings.at(-1)!));
    expect(lines[started]!.msg).toContain(
      "store: in-memory store, not durable: every task is lost when the process stops",
    );
    expect(lines[started]!.msg).toMatch(
      /^openwop-a2a-host listening on http:\/\/127\.0\.0\.1:\d+ \(cleartext: HTTP\/1\.1 \+ h2c\) — /,
    );
  });

  it("/readyz carries the warning in details", async () => {
    const res = await fetch(`${host!.url}/readyz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      status: string;
      details: { store: string; durable: boolean; warning: string[] };
    };
    expect(body.status).toBe("ready");
    expect(body.details.store).toBe("memory");
    expect(body.details.durable).toBe(false);
    expect(body.details.warning[0]).toBe(
      "NOT DURABLE: no MongoDB available, so this host runs on the IN-MEMORY store.",
    );
    expect(body.details.warning.join("\n")).toContain(LOCAL_MONGO_COMMAND);
  });
});
