// `openwop-a2a-host init`: the agent project it writes from templates/agent/ (names and versions filled in), and
// its refusals. The generated project installed, tested and started from the packed package:
// test/package/pack-install.test.ts.
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initProject, initSummary, packageNameFor } from "../../src/cli/init-project.js";

const root = join(import.meta.dirname, "..", "..");
const ours = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
  version: string;
  devDependencies: Record<string, string>;
};

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "init-project-"));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** Every file under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

describe("init", () => {
  it("writes the agent project into a new folder, named after the folder, with the versions the host pins", async () => {
    const dir = join(work, "Expense Bot");
    const result = await initProject(dir);
    expect(result).toMatchObject({ ok: true, dir, name: "expense-bot" });
    const files = [
      ".gitignore",
      "README.md",
      "package.json",
      "src/agent.ts",
      "src/handlers.ts",
      "src/main.ts",
      "test/agent.test.ts",
      "tsconfig.json",
      "workflows/draft.yaml",
    ];
    expect(await tree(dir)).toEqual(files);
    expect(result.ok && result.files).toEqual([...files].sort((a, b) => a.localeCompare(b)));

    const pkg = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as Record<string, any>;
    expect(pkg["name"]).toBe("expense-bot");
    expect(pkg["type"]).toBe("module");
    expect(Object.keys(pkg["scripts"])).toEqual(expect.arrayContaining(["start", "dev", "test"]));
    expect(pkg["dependencies"]).toEqual({ "openwop-a2a-host": `^${ours.version}` });
    for (const dev of ["@a2a-js/sdk", "vitest", "tsx", "typescript", "@types/node"])
      expect(pkg["devDependencies"][dev], dev).toBe(ours.devDependencies[dev]);

    // Every placeholder filled; the agent's card name and its test's expectation are the package name.
    for (const file of files) expect(await readFile(join(dir, file), "utf8"), file).not.toMatch(/\{\{/);
    expect(await readFile(join(dir, "src", "agent.ts"), "utf8")).toContain('name: "expense-bot"');
    expect(await readFile(join(dir, "test", "agent.test.ts"), "utf8")).toContain('toBe("expense-bot")');
    expect(initSummary(result as Extract<typeof result, { ok: true }>, dir)).toContain(
      `cd ${JSON.stringify(dir)}\n  npm install\n  npm test`,
    );
  });

  it("says how to install from a tarball: the file npm pack makes of this version (issue 40)", async () => {
    const dir = join(work, "from-tarball");
    const result = await initProject(dir);
    expect(initSummary(result as Extract<typeof result, { ok: true }>, dir)).toContain(
      `Instead of the plain "npm install", run\n  npm install /path/to/openwop-a2a-host-${ours.version}.tgz\n`,
    );
  });

  it("writes into an empty folder that exists", async () => {
    const dir = await mkdtemp(join(work, "empty-"));
    expect(await initProject(dir)).toMatchObject({ ok: true });
    expect(await tree(dir)).toContain("workflows/draft.yaml");
  });

  it("refuses a folder that is not empty and leaves it exactly as it was", async () => {
    const dir = await mkdtemp(join(work, "mine-"));
    await writeFile(join(dir, "package.json"), '{"name":"mine"}');
    const before = (await stat(join(dir, "package.json"))).mtimeMs;
    const result = await initProject(dir);
    expect(result).toEqual({
      ok: false,
      problem: `${dir} is not empty (package.json); init writes only into a new or empty folder, so nothing was written`,
    });
    expect(await tree(dir)).toEqual(["package.json"]);
    expect(await readFile(join(dir, "package.json"), "utf8")).toBe('{"name":"mine"}');
    expect((await stat(join(dir, "package.json"))).mtimeMs).toBe(before);
  });

  it("refuses a path that is a file", async () => {
    const file = join(work, "a-file");
    await writeFile(file, "x");
    expect(await initProject(file)).toEqual({
      ok: false,
      problem: `${file} is a file, not a folder; nothing was written`,
    });
    expect(await readFile(file, "utf8")).toBe("x");
  });
});

describe("packageNameFor", () => {
  it("turns a folder name into a valid npm package name", () => {
    expect(packageNameFor("my-agent")).toBe("my-agent");
    expect(packageNameFor("My Agent")).toBe("my-agent");
    expect(packageNameFor(".hidden_Thing!")).toBe("hidden_thing");
    expect(packageNameFor("Été 2026")).toBe("ete-2026");
    expect(packageNameFor("???")).toBe("my-agent");
  });
});
