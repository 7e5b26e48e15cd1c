import { execFileSync } from "node:child_process";
import { dirname, join, normalize } from "node:path/posix";
import { describe, expect, it } from "vitest";
import { isRelative, linksOf, readRepoFile, repoRoot } from "./markdown.js";

/**
 * The package's own docs have no dead links where a package user reads them: every relative link in a packed
 * Markdown file points at a packed file (or a folder holding one). The packed files are npm's own list
 * (`npm pack --dry-run --json`, package.json "files"), without the prepack build: the docs link no build output.
 */
function packedFiles(): string[] {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: repoRoot,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  const [pack] = JSON.parse(out) as Array<{ files: Array<{ path: string }> }>;
  return pack!.files.map((f) => f.path);
}

describe("links in the packed docs", () => {
  const files = packedFiles();
  const markdown = files.filter((f) => f.endsWith(".md"));

  it("the package carries the README and the docs", () => {
    expect(markdown).toContain("README.md");
    expect(markdown).toContain("docs/package.md");
  });

  it("every relative link in a packed Markdown file points into the package", () => {
    const shipped = new Set(files);
    const dead: string[] = [];
    for (const file of markdown) {
      for (const link of linksOf(file, readRepoFile(file)).filter((l) => isRelative(l.target))) {
        const path = decodeURIComponent(link.target.split("#", 1)[0]!);
        const target = path === "" ? file : normalize(join(dirname(file), path)).replace(/\/$/, "");
        const inPackage = shipped.has(target) || files.some((f) => f.startsWith(`${target}/`));
        if (!inPackage) dead.push(`${file}:${link.line} ${link.target} (${target} is not in the package)`);
      }
    }
    expect(dead, dead.join("\n")).toEqual([]);
  });
});
