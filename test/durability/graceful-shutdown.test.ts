import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SHUTDOWN_MARGIN_MS } from "../../src/shutdown-deadline.js";
import { readSse } from "../support/sse.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const FIXTURES = join(import.meta.dirname, "..", "fixtures");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The exit code, or "still running" if the process has not exited `ms` after SIGTERM (then it is killed). */
async function terminateWithin(server: ServerProcess, ms: number): Promise<number | null | "still running"> {
  const exited = server.terminate();
  const code = await Promise.race([exited, sleep(ms).then(() => "still running" as const)]);
  if (code === "still running") await server.kill();
  return code;
}
const sendMessage = (server: ServerProcess, skillId: string, text = "x") =>
  fetch(`${server.baseUrl}/a2a/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "message/send",
      params: {
        message: {
          kind: "message",
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text }],
          metadata: { skillId },
        },
        configuration: { blocking: false },
      },
    }),
  });

describe("SIGTERM shuts down gracefully", () => {
  it("ends open streams cleanly, finishes the in-flight request and exits 0", async () => {
    const server = await startServerProcess({ STORE: "memory", SHUTDOWN_GRACE_MS: "5000" });
    const post = (body: unknown) =>
      fetch(`${server.baseUrl}/a2a/jsonrpc`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    // A stream that stays open: the task works until cancelled.
    const running = (await (
      await post({
        jsonrpc: "2.0",
        id: 3,
        method: "message/send",
        params: {
          message: {
            kind: "message",
            messageId: randomUUID(),
            role: "user",
            parts: [{ kind: "text", text: "x" }],
            metadata: { skillId: "conformance-cancellable" },
          },
          configuration: { blocking: false },
        },
      })
    ).json()) as { result: { id: string } };
    const live = await post({ jsonrpc: "2.0", id: 4, method: "tasks/resubscribe", params: { id: running.result.id } });
    const frames = readSse(live);
    await new Promise((r) => setTimeout(r, 200));
    const code = await server.terminate();
    expect(code).toBe(0);
    const received = await frames; // resolves: the server ended the stream instead of cutting the socket
    expect((received[0]?.data as { result: { id: string } }).result.id).toBe(running.result.id);
    expect(server.output()).toContain("shutting down");
  });
});

// Issue 33, item 8: a shutdown always ends.
describe("a shutdown always ends", () => {
  const GRACE_MS = 1_000;
  const DEADLINE_MS = GRACE_MS + SHUTDOWN_MARGIN_MS;

  it("a host whose log reader went away mid-run keeps serving, and exits 0 within its deadline after SIGTERM", async () => {
    const server = await startServerProcess({ STORE: "memory", SHUTDOWN_GRACE_MS: String(GRACE_MS) });
    expect((await sendMessage(server, "echo")).status).toBe(200);
    // The reader of its stdout goes away (a log shipper, a terminal, a parent process): writes fail with EPIPE.
    server.child.stdout!.destroy();
    for (let i = 0; i < 3; i++) expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    // The first lines written after that are the shutdown's own: before the fix, the exit hook's log flush
    // (sonic-boom 4.2.1 flushSync) retried their EPIPE forever and the process never exited.
    expect(await terminateWithin(server, DEADLINE_MS)).toBe(0);
  });

  it("a step that never finishes (a handler ignoring its abort signal) ends in exit 1 at the deadline, naming the step on stderr", async () => {
    const server = await startServerProcess({
      STORE: "memory",
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
      BUILTIN_WORKFLOWS: "none",
      WORKFLOWS_DIR: join(FIXTURES, "stuck-workflows"),
      HANDLERS_MODULE: join(FIXTURES, "stuck-handlers.ts"),
    });
    expect((await sendMessage(server, "stuck")).status).toBe(200);
    await sleep(200); // the handler runs
    expect(await terminateWithin(server, DEADLINE_MS + 5_000)).toBe(1);
    const line = server
      .output()
      .split("\n")
      .find((l) => l.includes('"shutdown.deadline"'));
    expect(line).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({
      level: 60,
      event: "shutdown.deadline",
      step: "stopping task work (leases, pushes, peers)",
      deadlineMs: DEADLINE_MS,
    });
  });
});
