import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { codeBlocks, readRepoFile, repoRoot, section } from "./markdown.js";

/**
 * docs/clients.md: its ```ts blocks are one program for @a2a-js/sdk. Written to a file as they are, type-checked
 * (strict) and run with tsx against a real host (API keys on, so the key really travels) and a real webhook
 * receiver on loopback; what it prints must say each step did what the doc promises. The Python section is
 * shown, not run: the test checks it names the SDK version it was written for.
 */
const KEY = "clients-doc-key-0123456789abcdef";

function program(): string {
  const part = section(readRepoFile("docs/clients.md"), "JavaScript / TypeScript: `@a2a-js/sdk`");
  if (part === undefined) throw new Error("docs/clients.md has no @a2a-js/sdk section");
  return codeBlocks(part, "ts").join("\n");
}

function run(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

describe("docs/clients.md", () => {
  let t: TestApp;
  const receiver = new PushReceiver();
  // Inside the repository, so the program's imports resolve to the installed @a2a-js/sdk.
  mkdirSync(join(repoRoot, "test-artifacts"), { recursive: true });
  const work = mkdtempSync(join(repoRoot, "test-artifacts", "clients-doc-"));

  beforeAll(async () => {
    await receiver.start();
    t = await startTestApp({
      API_KEYS: JSON.stringify([{ id: "client", tenant: "acme", scopes: ["runs:create", "runs:read", "approvals:respond", "webhooks:manage"], key: KEY }]),
      PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
    });
    writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(work, "client.ts"), program());
  });

  afterAll(async () => {
    await t?.close();
    await receiver.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("the @a2a-js/sdk program type-checks under strict TypeScript", async () => {
    const tsc = join(repoRoot, "node_modules", ".bin", "tsc");
    const args = ["--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--types", "node", "client.ts"];
    const result = await run(tsc, args, {}, work);
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);
  }, 120_000);

  it("sends, streams to the gate, registers a push, subscribes and approves: each step against the real host", async () => {
    const env = { A2A_HOST: t.baseUrl, A2A_API_KEY: KEY, WEBHOOK_URL: receiver.url("/clients-doc") };
    const result = await run(join(repoRoot, "node_modules", ".bin", "tsx"), ["client.ts"], env, work);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^connected over JSONRPC, A2A 1\.0$/m);
    expect(out).toMatch(/^send: task \S+ is TASK_STATE_COMPLETED, artifact: hello from the SDK$/m);
    const taskId = /^stream: task (\S+) waits: true$/m.exec(out)?.[1];
    expect(taskId, out).toBeDefined();
    expect(out).toContain("stream: TASK_STATE_INPUT_REQUIRED");
    expect(out).toContain(`push: 1 config(s) on task ${taskId}`);
    expect(out).toMatch(/^subscribe: TASK_STATE_INPUT_REQUIRED$/m);
    expect(out).toMatch(/^subscribe: TASK_STATE_COMPLETED$/m);
    expect(out).toContain(`approve: task ${taskId} is TASK_STATE_COMPLETED`);
    // The webhook heard the task complete, with the token the program registered.
    const hit = await waitFor(() => receiver.hits.find((h) => h.path === "/clients-doc" && JSON.stringify(h.json).includes("TASK_STATE_COMPLETED")), 10_000, "the completed push");
    expect(hit.headers["x-a2a-notification-token"]).toMatch(/^[0-9a-f-]{36}$/);
  }, 120_000);

  it("the Python section names the a2a-sdk version it was written for and says it is not run in CI", () => {
    const python = section(readRepoFile("docs/clients.md"), "Python: `a2a-sdk`");
    expect(python).toBeDefined();
    expect(python).toMatch(/a2a-sdk.*\*\*0\.3\.x\*\*/);
    expect(python).toContain("shown, not run in CI");
    const [code] = codeBlocks(python!, "python");
    expect(code).toContain("from a2a.client import");
    for (const step of ["send:", "stream:", "set_task_callback", "resubscribe", '{"action": "accept"}']) expect(code, step).toContain(step);
  });
});
