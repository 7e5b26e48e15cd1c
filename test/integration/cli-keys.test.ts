// `openwop-a2a-host keys` as an operator runs it (the built bin, a clean environment): its `.env` output, and its
// Kubernetes Secret mounted as files the way deploy/kubernetes mounts it, each taken by a production `check` as it
// is; and the check naming what is missing when they are not given.
import { execFile, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Secret } from "kubernetes-models/v1/Secret";
import { parse } from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { KUBERNETES_SECRET_NAME } from "../../src/cli/keys-output.js";

const root = join(import.meta.dirname, "..", "..");
const MAIN = join(root, "dist", "src", "main.js");
const run = promisify(execFile);

async function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], {
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "", ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** What a production start needs besides the keys: addresses, not secrets. */
const ADDRESSES = {
  NODE_ENV: "production",
  PUBLIC_URL: "https://agent.example.com",
  MONGODB_URI: "mongodb://db.example:27017/openwop_a2a?replicaSet=rs0",
};

/** A `.env` file as Docker's `--env-file` reads it: comments and blank lines skipped, the rest of the line is the value. */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return env;
}

let dir: string;

beforeAll(async () => {
  const built = spawnSync(process.execPath, [join(root, "scripts", "build-if-stale.mjs")], {
    cwd: root,
    stdio: "inherit",
  });
  expect(built.status).toBe(0);
  dir = await mkdtemp(join(tmpdir(), "cli-keys-"));
}, 180_000);

describe("openwop-a2a-host keys", () => {
  it("prints .env lines a production check takes as they are", async () => {
    const keys = await cli(["keys"], {});
    expect(keys.code).toBe(0);
    const env = parseEnvFile(keys.stdout);
    expect(Object.keys(env)).toEqual([
      "API_KEYS",
      "INTERRUPT_TOKEN_KEYS",
      "SIGNING_KEYS",
      "PUSH_ENCRYPTION_KEY",
      "PUSH_SIGNING_KEY",
      "A2A_PEER_CALLBACK_KEY",
    ]);
    for (const value of Object.values(env)) expect(value).toMatch(/^[^\s'"$]*$|^[[{].*[}\]]$/);
    const check = await cli(["check"], { ...ADDRESSES, ...env });
    expect(check.stdout).toContain('"event":"check.ok"');
    expect(check.code).toBe(0);
  });

  it("prints a Kubernetes Secret that validates, and whose keys mounted as files pass a production check through <NAME>_FILE", async () => {
    const keys = await cli(["keys", "--format", "kubernetes"], {});
    expect(keys.code).toBe(0);
    const manifest = parse(keys.stdout) as { metadata: { name: string }; stringData: Record<string, string> };
    new Secret(manifest as ConstructorParameters<typeof Secret>[0]).validate();
    expect(manifest.metadata.name).toBe(KUBERNETES_SECRET_NAME);
    // The kubelet writes one file per key, named as the key, holding the value as it is.
    const mount = join(dir, "secrets");
    await mkdir(mount);
    const files: Record<string, string> = {};
    for (const [name, value] of Object.entries(manifest.stringData)) {
      await writeFile(join(mount, name), value, { mode: 0o400 });
      files[`${name}_FILE`] = join(mount, name);
    }
    const check = await cli(["check"], { ...ADDRESSES, ...files });
    expect(check.stdout).toContain('"event":"check.ok"');
    expect(check.code).toBe(0);
  });

  it("gives fresh keys each time", async () => {
    const [a, b] = await Promise.all([cli(["keys"], {}), cli(["keys"], {})]);
    const ea = parseEnvFile(a.stdout);
    const eb = parseEnvFile(b.stdout);
    for (const name of Object.keys(ea)) expect(ea[name]).not.toBe(eb[name]);
  });

  it("without them, a production check exits 2 naming each missing one, the same problems a start logs", async () => {
    const check = await cli(["check"], ADDRESSES);
    const start = await cli([], ADDRESSES);
    expect(check.code).toBe(2);
    expect(start.code).toBe(2);
    const problemsOf = (stdout: string) =>
      (JSON.parse(stdout.trim().split("\n").at(-1)!) as { problems: string[] }).problems;
    const problems = problemsOf(check.stdout);
    expect(problemsOf(start.stdout)).toEqual(problems);
    for (const name of [
      "API_KEYS",
      "INTERRUPT_TOKEN_KEYS",
      "SIGNING_KEYS",
      "PUSH_ENCRYPTION_KEY",
      "PUSH_SIGNING_KEY",
      "A2A_PEER_CALLBACK_KEY",
    ]) {
      expect(problems.join("\n")).toContain(name);
    }
  });
});
