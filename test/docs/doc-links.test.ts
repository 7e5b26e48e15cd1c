import { existsSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { headingAnchors, isRelative, linksOf, markdownFiles, readRepoFile, repoRoot, type Link } from "./markdown.js";

/** Every relative link in README.md and docs/*.md points at a file that exists, and a #anchor at a heading of it. */

/** What is wrong with one relative link, or undefined. */
function problemOf(link: Link): string | undefined {
  const [pathPart, anchor] = link.target.split("#", 2) as [string, string | undefined];
  const path = decodeURIComponent(pathPart);
  const resolved = path === "" ? join(repoRoot, link.file) : normalize(join(repoRoot, dirname(link.file), path));
  if (!resolved.startsWith(repoRoot)) return "points outside the repository";
  if (!existsSync(resolved)) return "no such file";
  if (anchor !== undefined && anchor !== "" && resolved.endsWith(".md") && statSync(resolved).isFile()) {
    const anchors = headingAnchors(readRepoFile(resolved.slice(repoRoot.length)));
    if (!anchors.has(anchor.toLowerCase())) return `no heading for #${anchor}`;
  }
  return undefined;
}

describe("links in README.md and docs/", () => {
  it("finds the links it should (and skips code)", () => {
    const found = linksOf(
      "x.md",
      "See [a](docs/a.md#b) and ![img](docs/c.png).\n`[not](a link)`\n```\n[nor](this)\n```\n[ref]: docs/d.md\n[out](https://example.com)",
    );
    expect(found.map((l) => l.target)).toEqual(["docs/a.md#b", "docs/c.png", "docs/d.md", "https://example.com"]);
  });

  it("computes GitHub's heading anchors", () => {
    const anchors = headingAnchors(
      "# Calling other A2A agents: `a2a.invoke`\n## Live inspection (XState inspection API)\n## Try it\n## Try it\n",
    );
    expect([...anchors]).toEqual([
      "calling-other-a2a-agents-a2ainvoke",
      "live-inspection-xstate-inspection-api",
      "try-it",
      "try-it-1",
    ]);
  });

  for (const file of markdownFiles()) {
    it(`${file}: every relative link resolves`, () => {
      const broken = linksOf(file, readRepoFile(file))
        .filter((link) => isRelative(link.target))
        .map((link) => ({ link, problem: problemOf(link) }))
        .filter((b) => b.problem !== undefined)
        .map(({ link, problem }) => `${link.file}:${link.line} ${link.target}: ${problem}`);
      expect(broken, broken.join("\n")).toEqual([]);
    });
  }
});
