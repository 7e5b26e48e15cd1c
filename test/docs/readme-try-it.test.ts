import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { codeBlocks, readRepoFile, repoRoot, section } from "./markdown.js";

/**
 * The README's "Try it" section, pasted verbatim into bash against the real host: every ```sh block of the
 * section, `localhost:8080` pointed at a host started here. `curl -s` gets `--fail-with-body` so an HTTP
 * error stops the script (`set -euo pipefail`), as a JSON-RPC error stops it at the next `jq -e`-free check
 * below: the printed states must be the ones the README promises.
 */
function tryItScript(): string {
  const tryIt = section(readRepoFile("README.md"), "Try it");
  if (tryIt === undefined) throw new Error('README.md has no "Try it" section');
  const blocks = codeBlocks(tryIt, "sh");
  if (blocks.length === 0) throw new Error('README.md "Try it" has no ```sh code block');
  return blocks.join("\n");
}

function runBash(script: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

describe("README Try it", () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp();
  });

  afterAll(async () => {
    await app?.close();
  });

  it("has no placeholders to fill in by hand", () => {
    const script = tryItScript();
    expect(script).not.toMatch(/<[a-z][a-z -]*>/i); // e.g. <task id>
    expect(script).toContain("localhost:8080");
  });

  it("runs verbatim with bash; the approved task ends completed", async () => {
    const script = tryItScript()
      .replaceAll("localhost:8080", `127.0.0.1:${app.port}`)
      .replaceAll("curl -s ", "curl -sS --fail-with-body ");
    // Asynchronously: the host answers from this same event loop.
    const run = await runBash(`set -euo pipefail\n${script}`);
    if (process.env["DOCS_TRY_IT_ECHO"]) console.log(run.stdout);
    const report = `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
    expect(run.status, report).toBe(0);
    const out = run.stdout;
    // The agent card's skills include the one the section uses.
    expect(out, report).toContain("approval-gate");
    // The task id captured into $TASK was a real id (echoed by the section).
    const ids = [...out.matchAll(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g)].map((m) => m[0]);
    expect(ids.length, report).toBeGreaterThan(0);
    // In order: it waits at the gate, then (after the approval) it is completed, and the reads agree.
    const waiting = out.indexOf('"input-required"');
    const completed = out.indexOf('"completed"', waiting);
    expect(waiting, report).toBeGreaterThanOrEqual(0);
    expect(completed, report).toBeGreaterThan(waiting);
    const lastState = [
      ...out.matchAll(/"(submitted|working|input-required|completed|failed|canceled|rejected|TASK_STATE_[A-Z_]+)"/g),
    ].at(-1)?.[1];
    expect(lastState, report).toMatch(/^(completed|TASK_STATE_COMPLETED)$/);
    // And the host agrees: the task the script started is completed in its store.
    const task = await app.store.get(ids[0]!);
    expect(task?.a2a.state, report).toBe("completed");
  });

  it("docs/openwop.md: the runs API example runs verbatim too; the approved run completes", async () => {
    const runs = section(readRepoFile("docs/openwop.md"), "The runs API");
    const script = codeBlocks(runs ?? "", "sh")
      .join("\n")
      .replaceAll("localhost:8080", `127.0.0.1:${app.port}`)
      .replaceAll("curl -s ", "curl -sS --fail-with-body ");
    expect(script).toContain("/v1/runs");
    const run = await runBash(`set -euo pipefail\n${script}`);
    const report = `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
    expect(run.status, report).toBe(0);
    expect(run.stdout, report).toContain('"waiting-approval"');
    expect(run.stdout, report).toContain('"run.completed"');
  });
});
