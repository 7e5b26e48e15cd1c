// Issue 40 item 6: a TypeScript handler's stack trace names its file and line, whether its package is ES modules
// or CommonJS (a CommonJS one used to run from a `data:` URL, which the trace named instead). In a Node process of
// its own: the test runner rewrites stack traces in its workers.
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const THROWING = `type Reason = { why: string };
const reason: Reason = { why: "no stock" };
export const handlers = {
  reserve: async (): Promise<never> => {
    throw new Error(reason.why);
  },
};
`;

/** Loads the module as the host does (HANDLERS_MODULE), runs the handler and prints the failure's stack. */
const PROBE = `import { loadHandlersModule } from ${JSON.stringify(join(ROOT, "src", "handlers-module.ts"))};
const loaded = await loadHandlersModule(process.argv[2]);
if (loaded.problems.length > 0) throw new Error(loaded.problems.join("; "));
await loaded.handlers.reserve({}).catch((err) => process.stdout.write(err.stack));
`;

describe("TypeScript handlers' stack traces (tsx found from the working directory: this repository's)", () => {
  it.each([
    ["ES modules", { name: "esm-project", type: "module" }],
    ["CommonJS", { name: "cjs-project" }],
  ])("%s: the trace names handlers.ts and the line of the throw", async (_case, manifest) => {
    const project = await mkdtemp(join(tmpdir(), "handler-stack-"));
    await writeFile(join(project, "package.json"), JSON.stringify(manifest));
    await writeFile(join(project, "handlers.ts"), THROWING);
    await writeFile(join(project, "probe.mts"), PROBE);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", join(project, "probe.mts"), join(project, "handlers.ts")],
      { cwd: ROOT },
    );
    const [first, frame] = stdout.split("\n");
    expect(first).toBe("Error: no stock");
    expect(frame).toMatch(new RegExp(`${join(project, "handlers.ts").replace(/[.]/g, "\\.")}(\\?[^:]*)?:5:\\d+\\)$`));
    expect(stdout).not.toContain("data:");
  });
});
