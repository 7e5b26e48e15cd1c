// The CLI as a user runs it: `node dist/src/main.js` (what the bin and the image run) with arguments and an
// environment, asserting the exit code and the output. The bad inputs are the ones that misled first users
// (issue 29): a typo'd handler, an unknown peer, a misspelled variable, a listed variable left unset.
import { execFile, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { knownVariables } from "../../src/config/known-variables.js";
import { builtinHandlers } from "../../src/workflows/builtin-handlers.js";

const root = join(import.meta.dirname, "..", "..");
const MAIN = join(root, "dist", "src", "main.js");
const run = promisify(execFile);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout's JSON log lines. */
  lines: Array<Record<string, unknown>>;
}

/** Runs the CLI to its exit with only `env` (and PATH) in its environment: nothing of this machine's leaks in. */
async function cli(args: string[], env: Record<string, string>, cwd: string): Promise<Ran> {
  let result: { stdout: string; stderr: string; code: number };
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], {
      cwd,
      env: { PATH: process.env["PATH"] ?? "", ...env },
      timeout: 60_000,
    });
    result = { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number };
    result = { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
  const lines = result.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { ...result, lines };
}

let dir: string;
let handlersModule: string;
const packageVersion = (JSON.parse(await readFile(join(root, "package.json"), "utf8")) as { version: string }).version;

beforeAll(async () => {
  // The build the bin runs, compiled only when older than the sources.
  const built = spawnSync(process.execPath, [join(root, "scripts", "build-if-stale.mjs")], {
    cwd: root,
    stdio: "inherit",
  });
  expect(built.status).toBe(0);
  dir = await mkdtemp(join(tmpdir(), "cli-test-"));
  handlersModule = join(dir, "handlers.mjs");
  await writeFile(
    handlersModule,
    `export const handlers = { "score-lead": async () => ({ output: { score: 1 }, artifacts: [] }) };\n`,
  );
}, 180_000);

async function workflowsDir(files: Record<string, string>): Promise<string> {
  const folder = await mkdtemp(join(dir, "workflows-"));
  for (const [name, body] of Object.entries(files)) await writeFile(join(folder, name), body);
  return folder;
}

const GOOD = `id: lead-intake
name: Lead intake
description: Scores a lead.
nodes:
  - { kind: task, id: score, handler: score-lead }
`;

/** Every stumble at once: a typo'd handler, a listed-but-unset and an unlisted variable, an unknown peer. */
const STUMBLES = `id: lead-intake
name: Lead intake
description: Scores a lead and tells billing.
nodes:
  - { kind: task, id: score, handler: score-led }
  - { kind: http, id: fetch, url: "\${SCORER_URL}/score" }
  - { kind: http, id: crm, url: "\${CRM_URL}/leads" }
  - { kind: a2a.invoke, id: notify, peer: biling }
`;

/** A schema error (an approval without a title) must not hide the typo'd handler of the same file. */
const SCHEMA_AND_HANDLER = `id: follow-up
name: Follow-up
description: Asks before following up.
nodes:
  - { kind: task, id: draft, handler: scor-lead }
  - { kind: approval, id: ok }
`;

const BILLING = JSON.stringify({ billing: { cardUrl: "https://billing.example/.well-known/agent-card.json" } });

describe("--help and --version", () => {
  it("--help lists every command and the variables that matter most, all of them real, and exits 0 without starting", async () => {
    const ran = await cli(["--help"], {}, dir);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain(`openwop-a2a-host ${packageVersion}`);
    for (const command of [
      "openwop-a2a-host [start]",
      "openwop-a2a-host check",
      "openwop-a2a-host init [dir]",
      "openwop-a2a-host --help",
      "openwop-a2a-host --version",
    ])
      expect(ran.stdout).toContain(command);
    expect(ran.stdout).not.toContain("listening on");
    const named = new Set(
      [...ran.stdout.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b(?:PORT|HOST)\b/g)].map((m) => m[0]),
    );
    for (const name of [
      "HANDLERS_MODULE",
      "WORKFLOWS_DIR",
      "WORKFLOW_VARIABLES",
      "PORT",
      "PUBLIC_URL",
      "MONGODB_URI",
      "LOG_LEVEL",
    ])
      expect(named.has(name), name).toBe(true);
    const known = knownVariables()!;
    // PUSH_ENABLE is the help's example of a typo: every other name must be one the host reads.
    expect([...named].filter((n) => n !== "PUSH_ENABLE" && !known.has(n))).toEqual([]);
    expect((await cli(["check", "-h"], {}, dir)).stdout).toBe(ran.stdout);
  });

  it("--version prints the package's version and exits 0", async () => {
    for (const flag of ["--version", "-v"]) {
      const ran = await cli([flag], {}, dir);
      expect(ran.code).toBe(0);
      expect(ran.stdout).toBe(`${packageVersion}\n`);
    }
  });

  it("an unknown argument exits 2 naming it and the likely command, without starting", async () => {
    const ran = await cli(["--hlep"], {}, dir);
    expect(ran.code).toBe(2);
    expect(ran.stdout).toBe("");
    expect(ran.stderr).toBe(
      'openwop-a2a-host: unknown command "--hlep" (did you mean "--help"?)\nRun "openwop-a2a-host --help" for the commands.\n',
    );
  });
});

describe("check", () => {
  it("valid settings, handlers and workflows: one check.ok line naming the skills, exit 0, nothing listens", async () => {
    const ran = await cli(
      ["check"],
      { HANDLERS_MODULE: handlersModule, WORKFLOWS_DIR: await workflowsDir({ "lead.yaml": GOOD }), PORT: "1" },
      dir,
    );
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.lines.map((l) => l["event"])).toEqual(["check.ok"]);
    expect(ran.lines[0]).toMatchObject({ skills: ["lead-intake"], handlers: ["score-lead"] });
  });

  it("every stumble of a first hour in one run: exit 2, one config.invalid line with every problem in full, and the misspelled variable warned about", async () => {
    const folder = await workflowsDir({ "a-lead.yaml": STUMBLES, "b-follow-up.yaml": SCHEMA_AND_HANDLER });
    const env = {
      HANDLERS_MODULE: handlersModule,
      WORKFLOWS_DIR: folder,
      A2A_PEERS: BILLING,
      WORKFLOW_VARIABLES: "SCORER_URL",
      PUSH_ENABLE: "false",
    };
    const known = `(register it as a handler: startHost's handlers or HANDLERS_MODULE; known: ${[...Object.keys(builtinHandlers), "score-lead"].sort().join(", ")})`;
    const a = join(folder, "a-lead.yaml");
    const b = join(folder, "b-follow-up.yaml");
    const problems = [
      `${a}: workflow "lead-intake", node "score": no handler named "score-led" (did you mean "score-lead"?) ${known}`,
      `${a}: workflow "lead-intake", node "fetch": url refers to \${SCORER_URL}, listed in WORKFLOW_VARIABLES but not set (set SCORER_URL in the environment; got "\${SCORER_URL}/score")`,
      `${a}: workflow "lead-intake", node "crm": url refers to \${CRM_URL}, which is not a variable workflows may use (add CRM_URL to WORKFLOW_VARIABLES; known: A2A_PEER_CARD_URL, SCORER_URL)`,
      `${a}: workflow "lead-intake", node "notify": peer "biling" is not configured (did you mean "billing"?) (configure it in A2A_PEERS, A2A_PEERS_FILE or startHost's peers; configured: billing)`,
      `${b}: invalid workflow definition: nodes/1: must have required property 'title'`,
      `${b}: workflow "follow-up", node "draft": no handler named "scor-lead" (did you mean "score-lead"?) ${known}`,
    ];
    const warning = {
      event: "config.unknown_variable",
      variable: "PUSH_ENABLE",
      suggestion: "PUSH_ENABLED",
      msg: "PUSH_ENABLE is set but openwop-a2a-host does not read it: did you mean PUSH_ENABLED? (as set, it has no effect)",
    };
    // `check` and a plain start report the same, before anything listens or opens a store.
    for (const args of [["check"], []]) {
      const ran = await cli(args, { ...env, PORT: "0", STORE: "memory" }, dir);
      expect(ran.code, `${args.join(" ")}: ${ran.stdout}${ran.stderr}`).toBe(2);
      expect(ran.lines.map((l) => l["event"])).toEqual(["config.unknown_variable", "config.invalid"]);
      expect(ran.lines[0]).toMatchObject(warning);
      expect(ran.lines[1]!["problems"]).toEqual(problems);
      expect(ran.lines[1]!["reason"]).toBe(`6 workflow problems:\n${problems.map((p) => `- ${p}`).join("\n")}`);
      expect(ran.stdout).not.toContain("listening on");
    }
  });

  it("the second pass (issue 40): near-miss names whatever word differs, output conditions, refused URLs, empty gates", async () => {
    const folder = await workflowsDir({
      "quotes.yaml": `id: quotes
name: Quotes
description: Prices a lead; an expensive one needs approval.
nodes:
  - { kind: task, id: score, handler: score-lead }
  - kind: switch
    id: route
    cases:
      - { when: { output: { scor.total: { $gt: 1000 } } }, goto: approve }
      - { when: { output: { approve.action: accept } }, goto: $end }
    default: crm
  - { kind: http, id: crm, url: "https://10.1.2.3/leads", next: approve }
  - { kind: approval, id: approve, title: Approve it, artifactFrom: crm, actions: [accept, reject] }
`,
    });
    const env = {
      HANDLERS_MODULE: handlersModule,
      WORKFLOWS_DIR: folder,
      WORKFLOW_DIR: folder,
      HANDLER_MODULE: handlersModule,
      MONGO_URI: "mongodb://db.example/agent",
    };
    const ran = await cli(["check"], env, dir);
    expect(ran.code, ran.stdout + ran.stderr).toBe(2);
    const warned = ran.lines.filter((l) => l["event"] === "config.unknown_variable");
    expect(warned.map((l) => [l["variable"], l["suggestion"]])).toEqual([
      ["WORKFLOW_DIR", "WORKFLOWS_DIR"],
      ["HANDLER_MODULE", "HANDLERS_MODULE"],
      ["MONGO_URI", "MONGODB_URI"],
    ]);
    const file = join(folder, "quotes.yaml");
    const problems = ran.lines.find((l) => l["event"] === "config.invalid")!["problems"] as string[];
    expect(problems).toEqual([
      `${file}: workflow "quotes", switch "route" case 1: output "scor.total" names no node of this workflow (did you mean "score"?)`,
      `${file}: workflow "quotes", switch "route" case 2: output "approve.action" reads node "approve", which cannot have run before this switch`,
      `${file}: workflow "quotes", node "crm": its url will be refused when it runs: 10.1.2.3 is a private (RFC 1918) address; to reach a private service, list it as host:port in HTTP_NODE_PRIVATE_HOSTS`,
    ]);
  });

  it("a gate that can show no artifact on some path: a workflow.warning line, and the check passes", async () => {
    const folder = await workflowsDir({
      "quotes.yaml": `id: quotes
name: Quotes
description: Prices a lead; an expensive one needs approval.
nodes:
  - { kind: task, id: score, handler: score-lead }
  - kind: switch
    id: route
    cases: [{ when: { output: { score.score: { $gte: 1 } } }, goto: approve }]
  - { kind: task, id: rescore, handler: score-lead }
  - { kind: approval, id: approve, title: Approve it, artifactFrom: rescore, actions: [accept, reject] }
`,
    });
    const ran = await cli(["check"], { HANDLERS_MODULE: handlersModule, WORKFLOWS_DIR: folder }, dir);
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.lines.map((l) => l["event"]).sort()).toEqual(["check.ok", "workflow.warning"]);
    expect(ran.lines.find((l) => l["event"] === "workflow.warning")!["msg"]).toBe(
      `${join(folder, "quotes.yaml")}: workflow "quotes", approval gate "approve": on some path none of "rescore" runs before it, so the approver may be shown no artifact (artifactFrom takes a list, or "$taken" for the path the run took)`,
    );
  });

  it("configuration problems: exit 2 with every one (a HANDLERS_MODULE that is missing, a bad PORT)", async () => {
    const ran = await cli(["check"], { HANDLERS_MODULE: join(dir, "nope.mjs"), PORT: "http" }, dir);
    expect(ran.code).toBe(2);
    const line = ran.lines.find((l) => l["event"] === "config.invalid")!;
    expect(line["problems"]).toHaveLength(2);
    expect((line["problems"] as string[])[0]).toBe('PORT must be a whole number between 0 and 65535 (got "http")');
    expect((line["problems"] as string[])[1]).toContain(join(dir, "nope.mjs"));
  });
});

/** Handlers in TypeScript: only TypeScript can load this (a type annotation, `satisfies`). */
const TS_HANDLERS = `type Score = { score: number };
const score = async (): Promise<{ output: Score; artifacts: [] }> => ({ output: { score: 1 } satisfies Score, artifacts: [] });
export const handlers = { "score-lead": score };
`;

describe("TypeScript handlers (HANDLERS_MODULE=./src/handlers.ts)", () => {
  it("loads them through the tsx of the user's project", async () => {
    const project = await mkdtemp(join(dir, "ts-project-"));
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "ts-project", type: "module" }));
    await mkdir(join(project, "src"));
    await writeFile(join(project, "src", "handlers.ts"), TS_HANDLERS);
    // The project's own tsx (ours, linked in as `npm install --save-dev tsx` would put it).
    await mkdir(join(project, "node_modules"));
    await symlink(join(root, "node_modules", "tsx"), join(project, "node_modules", "tsx"), "dir");
    const ran = await cli(
      ["check"],
      { HANDLERS_MODULE: "./src/handlers.ts", WORKFLOWS_DIR: await workflowsDir({ "lead.yaml": GOOD }) },
      project,
    );
    expect(ran.code, ran.stdout + ran.stderr).toBe(0);
    expect(ran.lines.at(-1)).toMatchObject({ event: "check.ok", skills: ["lead-intake"], handlers: ["score-lead"] });
  });

  it("without tsx in the project: exit 2, one config.invalid line saying what to install", async () => {
    const project = await mkdtemp(join(dir, "no-tsx-"));
    await writeFile(join(project, "handlers.ts"), TS_HANDLERS);
    const ran = await cli(
      ["check"],
      { HANDLERS_MODULE: "./handlers.ts", WORKFLOWS_DIR: await workflowsDir({ "lead.yaml": GOOD }) },
      project,
    );
    expect(ran.code).toBe(2);
    const line = ran.lines.find((l) => l["event"] === "config.invalid")!;
    expect(line["problems"]).toEqual([
      `HANDLERS_MODULE ${join(project, "handlers.ts")}: a TypeScript module needs tsx in your project (not found from ${project}): run \`npm install --save-dev tsx\` there, or compile the handlers to JavaScript`,
    ]);
  });
});

describe("init", () => {
  it("refuses a folder that is not empty: exit 2, the reason on stderr, nothing written", async () => {
    const project = await mkdtemp(join(dir, "existing-"));
    await writeFile(join(project, "README.md"), "mine\n");
    const ran = await cli(["init", project], {}, dir);
    expect(ran.code).toBe(2);
    expect(ran.stdout).toBe("");
    expect(ran.stderr).toBe(
      `openwop-a2a-host init: ${project} is not empty (README.md); init writes only into a new or empty folder, so nothing was written\n`,
    );
    expect(await readdir(project)).toEqual(["README.md"]);
    expect(await readFile(join(project, "README.md"), "utf8")).toBe("mine\n");
  });

  it("writes the project into a new folder and says what to type next", async () => {
    const ran = await cli(["init", "new-agent"], {}, dir);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toContain(`Created the agent project "new-agent" in ${join(dir, "new-agent")}`);
    expect(ran.stdout).toContain("  cd new-agent\n  npm install\n  npm test");
    expect((await readdir(join(dir, "new-agent"))).sort()).toEqual([
      ".gitignore",
      "README.md",
      "package.json",
      "src",
      "test",
      "tsconfig.json",
      "workflows",
    ]);
  });
});
