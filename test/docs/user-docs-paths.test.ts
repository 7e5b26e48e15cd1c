import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { markdownFiles, proseLines, readRepoFile, repoRoot } from "./markdown.js";

/**
 * The pages a package user reads cite no file the package does not carry. The npm package ships README.md and
 * docs/*.md but not the repository's `src/`, `test/`, `bench/`, `scripts/` or `examples/`, so a user page says what
 * such a file does instead of naming it (development.md lists them). Contributor pages may cite anything.
 * A path that `init` writes into the user's own project (it exists under `templates/agent/`) is allowed.
 * Fenced code blocks are not read: a command there may name another project's files.
 */
const USER_PAGES = [
  "README.md",
  "docs/a2a.md",
  "docs/clients.md",
  "docs/configuration.md",
  "docs/handlers.md",
  "docs/node-kinds.md",
  "docs/openwop.md",
  "docs/operating.md",
  "docs/package.md",
  "docs/security.md",
  "docs/workflows.md",
];
const CONTRIBUTOR_PAGES = ["docs/architecture.md", "docs/development.md", "docs/performance.md"];

const REPO_ONLY = /(?<![\w./-])(?:\.\.\/)*((?:src|test|bench|scripts|examples)\/[\w./-]*)/g;

/** The repository-only paths one Markdown text cites in its prose, with their line numbers. */
function repoOnlyPaths(markdown: string): Array<{ line: number; path: string }> {
  const found: Array<{ line: number; path: string }> = [];
  for (const { line, index } of proseLines(markdown)) {
    for (const match of line.matchAll(REPO_ONLY)) {
      const path = match[1]!.replace(/[.]+$/, "");
      if (existsSync(join(repoRoot, "templates/agent", path))) continue;
      found.push({ line: index + 1, path });
    }
  }
  return found;
}

describe("user pages cite no repository-only file", () => {
  it("finds the paths it should", () => {
    const text = [
      "See `test/durability/x.test.ts` and [the guard](../src/egress/guard.ts).",
      "Also scripts/build.mjs, `bench/README.md`. And `examples/`.",
      "Not `dist/src/cli/x.js`, `templates/agent/src/main.ts`, https://example.com/src/a.ts, nor `src/main.ts`.",
      "```sh",
      "npx vitest run src/scenarios/a.test.ts",
      "```",
    ].join("\n");
    expect(repoOnlyPaths(text)).toEqual([
      { line: 1, path: "test/durability/x.test.ts" },
      { line: 1, path: "src/egress/guard.ts" },
      { line: 2, path: "scripts/build.mjs" },
      { line: 2, path: "bench/README.md" },
      { line: 2, path: "examples/" },
    ]);
  });

  it("every page is either a user page or a contributor page", () => {
    const unclassified = markdownFiles().filter((f) => !USER_PAGES.includes(f) && !CONTRIBUTOR_PAGES.includes(f));
    expect(unclassified, "add the page to USER_PAGES or CONTRIBUTOR_PAGES").toEqual([]);
  });

  for (const page of USER_PAGES) {
    it(`${page} cites no src/, test/, bench/, scripts/ or examples/ path`, () => {
      const cited = repoOnlyPaths(readRepoFile(page)).map(({ line, path }) => `${page}:${line} ${path}`);
      expect(cited, `not in the package (describe it, or see docs/development.md):\n${cited.join("\n")}`).toEqual([]);
    });
  }
});
