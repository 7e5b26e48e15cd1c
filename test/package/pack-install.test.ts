// The package as a user gets it: `npm pack`, installed into an empty project, its API type-checked under a
// plain strict nodenext tsconfig (nothing copied from ours), and a tiny agent run from it two ways: through
// `startHost` and through the `openwop-a2a-host` CLI with HANDLERS_MODULE. A stock A2A client talks to both.
// Then `openwop-a2a-host init`'s project, from the same tarball: installed, its own test run, started.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ClientFactory } from "@a2a-js/sdk/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/server-process.js";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..", "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

const WORKFLOW = `id: greet
name: Greeter
description: Greets whoever the message names.
nodes:
  - { kind: task, id: greet, handler: greet }
`;

const HANDLERS = `import { HandlerError } from "openwop-a2a-host";
export const handlers = {
  greet: async (ctx) => {
    if (!ctx.input.text) throw new HandlerError("empty", "nobody to greet");
    return { output: { greeted: ctx.input.text }, artifacts: [{ name: "greeting", parts: [{ kind: "text", text: "Hello, " + ctx.input.text + "!" }] }] };
  },
};
`;

// Uses every name the issue lists, with their types, under strict; and a node kind of its own through the public
// plugin API (NodeKind generic over its node type: no cast), which runs after the greeting.
const AGENT = `import { startHost, HandlerError, type TaskHandler, type HandlerContext, type NodeKind, type WorkflowDefinition } from "openwop-a2a-host";

const greet: TaskHandler = async (ctx: HandlerContext) => {
  if (!ctx.input.text) throw new HandlerError("empty", "nobody to greet");
  return { output: { greeted: ctx.input.text }, artifacts: [{ name: "greeting", parts: [{ kind: "text", text: \`Hello, \${ctx.input.text}!\` }] }] };
};

interface StampNode { kind: "stamp"; id: string; title?: string; by: string }
const stamp: NodeKind<StampNode> = {
  kind: "stamp",
  schema: { type: "object", additionalProperties: false, required: ["kind", "id", "by"], properties: { kind: { const: "stamp" }, id: { type: "string" }, by: { type: "string" } } },
  check: (node) => (node.by === "" ? \`node "\${node.id}": by is empty\` : undefined),
  executor: () => ({
    step(node, run) {
      run.complete({ output: { stampedBy: node.by, greeted: run.outputs["greet"] } });
    },
  }),
  view: { label: (node) => \`stamp by \${node.by}\` },
};

const workflow: WorkflowDefinition<StampNode> = {
  id: "greet",
  name: "Greeter",
  description: "Greets whoever the message names.",
  nodes: [{ kind: "task", id: "greet", handler: "greet" }, { kind: "stamp", id: "stamp", by: "pack-test" }],
};

const host = await startHost({
  port: 0,
  logLevel: "silent",
  agent: { name: "Pack Test Agent", description: "Greets people.", provider: { organization: "Example Org", url: "https://example.org" } },
  workflows: [workflow],
  nodeKinds: [stamp],
  handlers: { greet },
  peers: { other: { cardUrl: "https://other.example/.well-known/agent-card.json", credentials: { bearer: "a-token-for-the-other-agent" } } },
  env: { STORE: "memory", CONFORMANCE_SEAMS: "false" },
});
console.log(JSON.stringify({ url: host.url }));
process.stdin.resume();
process.stdin.on("end", () => void host.close().then(() => process.exit(0)));
`;

const BAD_OPTIONS = `import { startHost } from "openwop-a2a-host";
try {
  await startHost({ port: -1, agent: { iconUrl: "not a url" }, env: { STORE: "memory" }, prot: 1 } as never);
} catch (err) {
  console.log(JSON.stringify({ name: (err as Error).name, message: (err as Error).message }));
}
`;

/** TASK_STATE_COMPLETED in the SDK's 1.0 types. */
const COMPLETED = 3;

let project: string;
let tarball: string;

/** Waits for the process's exit (at once if it has already exited). */
async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once("exit", resolve));
}

async function readyUrl(child: ChildProcess, pattern: RegExp): Promise<string> {
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s:\n${out}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const match = pattern.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${out}`));
    });
  });
}

interface GreetResult {
  card: { name: string; skills: Array<{ id: string }>; provider?: { organization: string } };
  state: number;
  greeting: unknown;
}

/** A stock A2A client (@a2a-js/sdk, speaking 1.0 from the card it reads) sends one message and blocks until done. */
async function greetThrough(url: string): Promise<GreetResult> {
  const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as GreetResult["card"];
  const client = await new ClientFactory().createFromUrl(url);
  const result = await client.sendMessage({
    tenant: "",
    message: {
      messageId: randomUUID(),
      contextId: "",
      taskId: "",
      role: 1,
      parts: [{ content: { $case: "text", value: "Ada" }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  });
  if (!("status" in result)) throw new Error("expected a Task, got a Message");
  return { card, state: result.status?.state ?? -1, greeting: result.artifacts[0]?.parts[0]?.content };
}

describe("the packed package, installed into an empty project", () => {
  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), "openwop-pack-"));
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", project], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    });
    tarball = join(project, (JSON.parse(stdout) as Array<{ filename: string }>)[0]!.filename);
    const app = join(project, "app");
    await mkdir(join(app, "workflows"), { recursive: true });
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "my-agent", private: true, type: "module" }));
    // The user's own tsconfig: strict and nodenext, nothing else of ours.
    await writeFile(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          outDir: "out",
        },
        include: ["*.ts"],
      }),
    );
    await writeFile(join(app, "agent.ts"), AGENT);
    await writeFile(join(app, "bad-options.ts"), BAD_OPTIONS);
    await writeFile(join(app, "handlers.js"), HANDLERS);
    await writeFile(join(app, "workflows", "greet.yaml"), WORKFLOW);
    // From the cache `npm ci` filled; the registry only for what it lacks.
    await run("npm", ["install", tarball, "@types/node@20", "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: app,
      maxBuffer: 64 * 1024 * 1024,
    });
  }, 300_000);

  afterAll(async () => {
    if (project) await rm(project, { recursive: true, force: true });
  });

  it("ships the build, the built-in workflows and schemas, and no sources or tests", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball]);
    const files = stdout.split("\n").filter(Boolean);
    expect(files).toContain("package/dist/src/index.js");
    expect(files).toContain("package/dist/src/index.d.ts");
    expect(files).toContain("package/dist/src/main.js");
    expect(files.some((f) => f.startsWith("package/workflows/demo/"))).toBe(true);
    expect(files.some((f) => f.startsWith("package/schemas/"))).toBe(true);
    expect(files.some((f) => /\/assets\/index\.html$/.test(f))).toBe(true);
    // TypeScript sources only in the project template `init` writes.
    expect(
      files.filter(
        (f) =>
          /^package\/(src|test|bench)\//.test(f) ||
          (f.endsWith(".ts") && !f.endsWith(".d.ts") && !f.startsWith("package/templates/agent/")),
      ),
    ).toEqual([]);
    expect(files).toContain("package/templates/agent/src/agent.ts");
  });

  it("type-checks the public API under the user's own strict nodenext tsconfig", async () => {
    const app = join(project, "app");
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app }).catch((err: { stdout: string }) => {
      throw new Error(`tsc failed:\n${err.stdout}`);
    });
    expect((await readdir(join(app, "out"))).sort()).toEqual(["agent.js", "bad-options.js"]);
  }, 120_000);

  it("keeps internals out of reach: a deep import is refused", async () => {
    const app = join(project, "app");
    const probe = `import("openwop-a2a-host/dist/src/core.js").then(() => console.log("reachable"), (e) => console.log(e.code))`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", probe], { cwd: app });
    expect(stdout.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
  });

  it("runs an agent of its own through startHost, with its name and only its skill", async () => {
    const app = join(project, "app");
    const child = spawn(process.execPath, [join(app, "out", "agent.js")], {
      cwd: app,
      stdio: ["pipe", "pipe", "pipe"],
    });
    try {
      const url = await readyUrl(child, /\{"url":"([^"]+)"\}/);
      const { state, greeting, card } = await greetThrough(url);
      expect(card.name).toBe("Pack Test Agent");
      expect(card.provider?.organization).toBe("Example Org");
      expect(card.skills.map((s) => s.id)).toEqual(["greet"]);
      expect(state).toBe(COMPLETED);
      expect(greeting).toEqual({ $case: "text", value: "Hello, Ada!" });
    } finally {
      child.stdin!.end();
      await exited(child);
    }
    expect(child.exitCode).toBe(0);
  }, 90_000);

  it("lists every bad option at once, naming the option", async () => {
    const app = join(project, "app");
    const { stdout } = await run(process.execPath, [join(app, "out", "bad-options.js")], { cwd: app });
    const error = JSON.parse(stdout) as { name: string; message: string };
    expect(error.name).toBe("ConfigError");
    expect(error.message).toMatch(/unknown option prot/);
    expect(error.message).toMatch(/option port: PORT must be a whole number/);
    expect(error.message).toMatch(/option agent\.iconUrl: AGENT_ICON_URL/);
  }, 60_000);

  it("runs the CLI with HANDLERS_MODULE and WORKFLOWS_DIR, as npx and the container do", async () => {
    const app = join(project, "app");
    const port = await freePort();
    const bin = join(app, "node_modules", ".bin", "openwop-a2a-host");
    const child = spawn(bin, [], {
      cwd: app,
      env: {
        ...process.env,
        PORT: String(port),
        HOST: "127.0.0.1",
        STORE: "memory",
        HANDLERS_MODULE: "./handlers.js",
        WORKFLOWS_DIR: "./workflows",
        AGENT_NAME: "CLI Agent",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      await readyUrl(child, /(listening on)/);
      const { state, greeting, card } = await greetThrough(`http://127.0.0.1:${port}`);
      expect(card.name).toBe("CLI Agent");
      expect(card.skills.map((s) => s.id)).toEqual(["greet"]);
      expect(state).toBe(COMPLETED);
      expect(greeting).toEqual({ $case: "text", value: "Hello, Ada!" });
    } finally {
      child.kill("SIGTERM");
      await exited(child);
    }
    expect(child.exitCode).toBe(0);
  }, 90_000);

  it("init writes an agent project that installs, type-checks, passes its own test and starts under its own name", async () => {
    const bin = join(project, "app", "node_modules", ".bin", "openwop-a2a-host");
    const agent = join(project, "my-agent");
    // What a new user has: no variables of this test run (vitest's, npm's, our MongoDB's).
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(VITEST|npm_|TEST$|NODE_ENV$|MONGODB_URI$)/.test(k)),
    );
    const init = await run(bin, ["init", "my-agent"], { cwd: project, env });
    expect(init.stdout).toContain(`Created the agent project "my-agent" in ${agent}`);
    // The package from this tarball (it is not on the registry yet); the rest as package.json pins it, from the cache.
    await run("npm", ["install", tarball, "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: agent,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    await run("npm", ["run", "typecheck"], { cwd: agent, env }).catch((err: { stdout: string }) => {
      throw new Error(`the generated project does not type-check:\n${err.stdout}`);
    });
    const tested = await run("npm", ["test"], { cwd: agent, env: { ...env, NO_COLOR: "1" } }).catch(
      (err: { stdout: string; stderr: string }) => {
        throw new Error(`the generated project's test failed:\n${err.stdout}\n${err.stderr}`);
      },
    );
    expect(tested.stdout).toMatch(/Tests\s+3 passed/);

    const port = await freePort();
    // `npm start` in its own process group, so the signal reaches npm, tsx and the agent alike.
    const child = spawn("npm", ["start"], {
      cwd: agent,
      detached: true,
      env: { ...env, PORT: String(port), STORE: "memory" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      await readyUrl(child, /(listening on)/);
      const card = (await (
        await fetch(`http://127.0.0.1:${port}/.well-known/agent-card.json`)
      ).json()) as GreetResult["card"];
      expect(card.name).toBe("my-agent");
      expect(card.skills.map((s) => s.id)).toEqual(["draft"]);
    } finally {
      process.kill(-child.pid!, "SIGTERM");
      await exited(child);
    }
  }, 300_000);

  it("stops a CLI start whose HANDLERS_MODULE is missing, with its path and the reason", async () => {
    const app = join(project, "app");
    const bin = join(app, "node_modules", ".bin", "openwop-a2a-host");
    const result = await run(bin, [], {
      cwd: app,
      env: { ...process.env, STORE: "memory", PORT: "0", HANDLERS_MODULE: "./nope.js", WORKFLOWS_DIR: "./workflows" },
    }).then(
      () => ({ code: 0, stdout: "" }),
      (err: { code: number; stdout: string }) => err,
    );
    expect(result.code).toBe(2);
    expect(result.stdout).toContain(join(app, "nope.js"));
    expect(result.stdout).toContain("no such file");
  }, 60_000);
});
