// The recipe of docs/architecture.md "How to add … a draft version", followed as written on a copy of src/: a
// folder `a2a/v99/` with its module, its id in A2A_DRAFT_VERSIONS, one line in the registry. Nothing else is
// touched. The copy must type-check, and a host started from it with A2A_DRAFT_VERSIONS=9.9 serves the new version
// on JSON-RPC, HTTP+JSON and the card (signed, as its module says), while 1.0 callers are unaffected.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
// Under the repository's node_modules, so the copy resolves the same packages.
mkdirSync(join(root, "node_modules", ".cache"), { recursive: true });
const copy = mkdtempSync(join(root, "node_modules", ".cache", "a2a-version-recipe-"));

function edit(path: string, from: string, to: string): void {
  const file = join(copy, path);
  const text = readFileSync(file, "utf8");
  if (!text.includes(from)) throw new Error(`the recipe's step no longer applies to ${path}: "${from}" is not there`);
  writeFileSync(file, text.replace(from, to));
}

describe("adding an A2A version, as docs/architecture.md says", () => {
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it("a folder, its id and one registry line: it type-checks and is served on every binding", () => {
    for (const dir of ["src", "schemas", "workflows"]) cpSync(join(root, dir), join(copy, dir), { recursive: true });
    mkdirSync(join(copy, "docs"));
    cpSync(join(root, "docs", "configuration.md"), join(copy, "docs", "configuration.md"));
    cpSync(join(root, "package.json"), join(copy, "package.json"));
    writeFileSync(
      join(copy, "tsconfig.json"),
      JSON.stringify({
        extends: join(root, "tsconfig.json"),
        compilerOptions: { rootDir: ".", noEmit: true },
        include: ["src", "serve.ts"],
      }),
    );
    // 1. The folder: a draft that reads 1.0's wire shapes and reuses 1.0's parts by import.
    mkdirSync(join(copy, "src", "a2a", "v99"));
    writeFileSync(
      join(copy, "src", "a2a", "v99", "v99-version.ts"),
      `import type { A2AVersionModule } from "../version-module.js";
import { v10 } from "../v10/v10-version.js";

export const v99: A2AVersionModule = { ...v10, version: "9.9", sharesShapesWith: "1.0", card: { ...v10.card, profile: "a2a-9.9-draft" } };
`,
    );
    // 2. Its id.
    edit(
      "src/domain/a2a-version.ts",
      'export const A2A_DRAFT_VERSIONS = ["1.1"] as const;',
      'export const A2A_DRAFT_VERSIONS = ["1.1", "9.9"] as const;',
    );
    // 3. One line in the registry (and its import).
    edit("src/a2a/versions.ts", '  "1.1": v11,\n', '  "1.1": v11,\n  "9.9": v99,\n');
    edit(
      "src/a2a/versions.ts",
      'import { v11 } from "./v11/v11-version.js";',
      'import { v11 } from "./v11/v11-version.js";\nimport { v99 } from "./v99/v99-version.js";',
    );
    // A host from the copy, asked over each binding.
    writeFileSync(
      join(copy, "serve.ts"),
      `import { createApp } from "./src/app.js";
import { loadConfig } from "./src/config/config.js";
import { createLogger } from "./src/observability/logger.js";
import { MemoryTaskStore } from "./src/store/memory-task-store.js";

const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", A2A_DRAFT_VERSIONS: "9.9", BUILTIN_WORKFLOWS: "demo", DATA_DIR: "${join(copy, "data")}" });
const app = await createApp({ config, logger: createLogger("silent"), store: new MemoryTaskStore(), durableStore: false });
const { port } = await app.listen();
const base = "http://127.0.0.1:" + port;
const rpc = async (method: string, params: unknown, version: string) =>
  (await (await fetch(base + "/a2a/jsonrpc", { method: "POST", headers: { "content-type": "application/json", "A2A-Version": version }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()) as Record<string, any>;
const message = { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "hello" }], metadata: { skillId: "echo" } };
const sent = await rpc("SendMessage", { message }, "9.9");
const got = await rpc("GetTask", { id: sent.result.task.id }, "9.9");
const rest = await fetch(base + "/tasks/" + sent.result.task.id, { headers: { "A2A-Version": "9.9" } });
const card = (await (await fetch(base + "/.well-known/agent-card.json", { headers: { "A2A-Version": "9.9" } })).json()) as Record<string, any>;
const v10 = await rpc("GetTask", { id: sent.result.task.id }, "1.0");
const unknown = await rpc("GetTask", { id: sent.result.task.id }, "9.8");
console.log(JSON.stringify({ sent: sent.result?.task?.status?.state, got: got.result?.status?.state, rest: rest.status, cardSigned: Array.isArray(card.signatures) && card.signatures.length > 0, versions: card.supportedInterfaces.map((i: any) => i.protocolVersion), v10: v10.result?.status?.state, unknown: unknown.error?.code }));
await app.close();
`,
    );
    execFileSync(join(root, "node_modules", ".bin", "tsc"), ["-p", join(copy, "tsconfig.json")], { stdio: "pipe" });
    const out = execFileSync(join(root, "node_modules", ".bin", "tsx"), [join(copy, "serve.ts")], {
      cwd: copy,
      encoding: "utf8",
    });
    const seen = JSON.parse(out.trim().split("\n").pop()!) as Record<string, unknown>;
    expect(seen).toEqual({
      sent: "TASK_STATE_COMPLETED",
      got: "TASK_STATE_COMPLETED",
      rest: 200,
      cardSigned: true,
      versions: expect.arrayContaining(["9.9", "1.0", "0.3"]),
      v10: "TASK_STATE_COMPLETED",
      unknown: -32009,
    });
  }, 120_000);
});
