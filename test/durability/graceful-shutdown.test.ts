import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { readSse } from "../support/sse.js";
import { startServerProcess } from "../support/server-process.js";

describe("SIGTERM shuts down gracefully", () => {
  it("ends open streams cleanly, finishes the in-flight request and exits 0", async () => {
    const server = await startServerProcess({ STORE: "memory", SHUTDOWN_GRACE_MS: "5000" });
    const post = (body: unknown) => fetch(`${server.baseUrl}/a2a/jsonrpc`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    // A stream that stays open: the task works until cancelled.
    const running = (await (
      await post({ jsonrpc: "2.0", id: 3, method: "message/send", params: { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "x" }], metadata: { skillId: "conformance-cancellable" } }, configuration: { blocking: false } } })
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
