import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";

/**
 * SSE responses send their headers as the stream opens. Read off the raw socket: the header block must
 * arrive on its own, before any body byte; a server that held the headers back would send them only
 * together with the first keepalive comment (~15 s later on a quiet stream).
 */
describe("SSE headers go out when a stream opens", () => {
  let t: TestApp;
  let runId: string;

  beforeAll(async () => {
    t = await startTestApp({ CONSOLE_ENABLED: "true" });
    const res = await fetch(`${t.baseUrl}/a2a/jsonrpc`, {
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
            parts: [{ kind: "text", text: "report" }],
            metadata: { skillId: "approval-gate" },
          },
        },
      }),
    });
    runId = ((await res.json()) as { result: { id: string; status: { state: string } } }).result.id;
  });
  afterAll(() => t.close());

  /** What the socket holds once the response's header block is complete (and nothing else was sent). */
  const rawOpen = (path: string, extra = ""): Promise<{ head: string; bodySoFar: string }> =>
    new Promise((resolve, reject) => {
      const socket = connect(t.port, "127.0.0.1");
      let received = "";
      socket.on("error", reject);
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1");
        const end = received.indexOf("\r\n\r\n");
        if (end < 0) return;
        socket.destroy();
        resolve({ head: received.slice(0, end), bodySoFar: received.slice(end + 4) });
      });
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n${extra}\r\n`);
    });

  it.each([
    ["OpenWOP run events (nothing new after ?after=)", () => `/v1/runs/${runId}/events?after=999999`],
    ["console task events (nothing new after ?after=)", () => `/console/api/tasks/${runId}/events?after=999999`],
  ])("%s: the header block arrives alone", async (_name, path) => {
    const { head, bodySoFar } = await rawOpen(path());
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head.toLowerCase()).toContain("content-type: text/event-stream");
    expect(bodySoFar).not.toContain("keepalive");
    expect(bodySoFar).toBe("");
  });

  it.each([
    ["HTTP+JSON 0.3 :subscribe", () => `/v1/tasks/${runId}:subscribe`, ""],
    ["HTTP+JSON 1.0 :subscribe", () => `/tasks/${runId}:subscribe`, "A2A-Version: 1.0\r\n"],
    ["console task list stream", () => "/console/api/tasks/stream", ""],
  ])("%s: the headers come with the stream's first event, never a keepalive", async (_name, path, extra) => {
    const { head, bodySoFar } = await rawOpen(path(), extra);
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head.toLowerCase()).toContain("content-type: text/event-stream");
    expect(bodySoFar).not.toContain("keepalive");
  });
});
