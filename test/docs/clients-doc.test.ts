import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PushReceiver, waitFor } from "../support/push-receiver.js";
import { startTestApp, type TestApp } from "../support/start-server.js";
import { TestCertificates } from "../support/test-certificates.js";
import { codeBlocks, readRepoFile, repoRoot, section } from "./markdown.js";

/**
 * docs/clients.md: its ```ts blocks are one program for @a2a-js/sdk. Written to a file as they are, type-checked
 * (strict) and run with tsx against a real host (API keys on, so the key really travels) and a real webhook
 * receiver on loopback; what it prints must say each step did what the doc promises. Then once more against a
 * host with TLS whose certificate comes from a CA made for the test (the doc's CA file and NODE_EXTRA_CA_CERTS).
 * The install line must name every package the program loads. The Python section is shown, not run: the test
 * checks it names the SDK version it was written for.
 */
const KEY = "clients-doc-key-0123456789abcdef";

function sdkSection(): string {
  const part = section(readRepoFile("docs/clients.md"), "JavaScript / TypeScript: `@a2a-js/sdk`");
  if (part === undefined) throw new Error("docs/clients.md has no @a2a-js/sdk section");
  return part;
}

function program(): string {
  return codeBlocks(sdkSection(), "ts").join("\n");
}

/** The bare package names a module's text imports (static `import … from "x"` / `export … from "x"`), `node:` left out. */
function packagesImported(code: string): Set<string> {
  const names = new Set<string>();
  for (const match of code.matchAll(
    /(?:^|[\s;])(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']/g,
  )) {
    const specifier = match[1] ?? match[2]!;
    if (specifier.startsWith(".") || specifier.startsWith("node:")) continue;
    names.add(specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!);
  }
  return names;
}

/**
 * What installing the SDK does not bring but the program loads: the packages it imports itself, and those the
 * SDK entry points it imports load (their own files and chunks, followed) that are not the SDK's dependencies.
 */
function packagesToInstall(code: string): Set<string> {
  const sdkRoot = join(repoRoot, "node_modules", "@a2a-js", "sdk");
  const manifest = JSON.parse(readFileSync(join(sdkRoot, "package.json"), "utf8")) as {
    exports: Record<string, { import: string }>;
    dependencies?: Record<string, string>;
  };
  const needed = packagesImported(code);
  const seen = new Set<string>();
  const follow = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const name of packagesImported(text))
      if (name !== "@a2a-js/sdk" && !(name in (manifest.dependencies ?? {}))) needed.add(name);
    for (const match of text.matchAll(/from\s*["'](\.[^"']+)["']/g)) follow(join(dirname(file), match[1]!));
  };
  for (const match of code.matchAll(/from\s*["'](@a2a-js\/sdk(?:\/[^"']+)?)["']/g)) {
    const entry = manifest.exports[`.${match[1]!.slice("@a2a-js/sdk".length)}`];
    if (!entry) throw new Error(`@a2a-js/sdk exports no ${match[1]}`);
    follow(join(sdkRoot, entry.import));
  }
  return needed;
}

function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
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
      API_KEYS: JSON.stringify([
        {
          id: "client",
          tenant: "acme",
          scopes: ["runs:create", "runs:read", "approvals:respond", "webhooks:manage"],
          key: KEY,
        },
      ]),
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
    const args = [
      "--noEmit",
      "--strict",
      "--skipLibCheck",
      "--target",
      "es2022",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--types",
      "node",
      "client.ts",
    ];
    const result = await run(tsc, args, {}, work);
    expect(result.stdout + result.stderr).toBe("");
    expect(result.status).toBe(0);
  }, 120_000);

  it("the install line names every package the program loads (the SDK's gRPC transport needs two optional peers)", () => {
    const install = codeBlocks(sdkSection(), "sh").find((block) => block.includes("npm install"));
    expect(install).toBeDefined();
    const named = new Set(
      install!
        .trim()
        .split(/\s+/)
        .slice(2)
        .map((arg) => arg.replace(/(?<=.)@[^@/]*$/, "")),
    );
    const needed = packagesToInstall(program());
    expect([...needed].sort()).toEqual(["@a2a-js/sdk", "@bufbuild/protobuf", "@grpc/grpc-js"]);
    for (const name of needed) expect(named, name).toContain(name);
  });

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
    expect(out).toMatch(/^grpc: GRPC over h2c, task \S+ is TASK_STATE_COMPLETED$/m);
    // The webhook heard the task complete, with the token the program registered.
    const hit = await waitFor(
      () =>
        receiver.hits.find((h) => h.path === "/clients-doc" && JSON.stringify(h.json).includes("TASK_STATE_COMPLETED")),
      10_000,
      "the completed push",
    );
    expect(hit.headers["x-a2a-notification-token"]).toMatch(/^[0-9a-f-]{36}$/);
  }, 120_000);

  it("the Python section names the a2a-sdk version it was written for and says it is not run in CI", () => {
    const python = section(readRepoFile("docs/clients.md"), "Python: `a2a-sdk`");
    expect(python).toBeDefined();
    expect(python).toMatch(/a2a-sdk.*\*\*0\.3\.x\*\*/);
    expect(python).toContain("shown, not run in CI");
    const [code] = codeBlocks(python!, "python");
    expect(code).toContain("from a2a.client import");
    for (const step of ["send:", "stream:", "set_task_callback", "resubscribe", '{"action": "accept"}'])
      expect(code, step).toContain(step);
  });
});

describe("docs/clients.md against a host with TLS and a private CA", () => {
  const certs = new TestCertificates();
  const ca = certs.ca("clients-doc-ca");
  const server = certs.leaf("clients-doc-server", ca, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
  let t: TestApp;
  mkdirSync(join(repoRoot, "test-artifacts"), { recursive: true });
  const work = mkdtempSync(join(repoRoot, "test-artifacts", "clients-doc-tls-"));

  beforeAll(async () => {
    t = await startTestApp({
      TLS_CERT_FILE: server.certFile,
      TLS_KEY_FILE: server.keyFile,
      API_KEYS: JSON.stringify([
        { id: "client", tenant: "acme", scopes: ["runs:create", "runs:read", "approvals:respond"], key: KEY },
      ]),
    });
    writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(work, "client.ts"), program());
  });

  afterAll(async () => {
    await t?.close();
    rmSync(work, { recursive: true, force: true });
    certs.remove();
  });

  it("the same program, given the CA file (and NODE_EXTRA_CA_CERTS for fetch), works over https and gRPC over TLS", async () => {
    expect(t.baseUrl).toMatch(/^https:/);
    const env = { A2A_HOST: t.baseUrl, A2A_API_KEY: KEY, A2A_CA_FILE: ca.certFile, NODE_EXTRA_CA_CERTS: ca.certFile };
    const result = await run(join(repoRoot, "node_modules", ".bin", "tsx"), ["client.ts"], env, work);
    // The test host is 127.0.0.1 (a host name would be the usual case): grpc-js then sets an IP as the TLS
    // server name, which Node warns about (DEP0123). That warning, and nothing else, is allowed.
    const stderr = result.stderr.replace(
      /^\(node:\d+\) \[DEP0123\] .*\n\(Use `node --trace-deprecation \.\.\.` .*\n/m,
      "",
    );
    expect(stderr).toBe("");
    expect(result.status).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^connected over JSONRPC, A2A 1\.0$/m);
    expect(out).toMatch(/^send: task \S+ is TASK_STATE_COMPLETED, artifact: hello from the SDK$/m);
    expect(out).toMatch(/^approve: task \S+ is TASK_STATE_COMPLETED$/m);
    expect(out).toMatch(/^grpc: GRPC over TLS, task \S+ is TASK_STATE_COMPLETED$/m);
  }, 120_000);
});
