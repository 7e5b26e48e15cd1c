import { describe, expect, it } from "vitest";
import { headingAnchors, readRepoFile, section } from "./markdown.js";

/** The README stays a front page: short, with a table of contents, the two set-up commands and the required sections. */
const readme = readRepoFile("README.md");

describe("README.md", () => {
  it("has at most 300 lines", () => {
    expect(readme.replace(/\n$/, "").split("\n").length).toBeLessThanOrEqual(300);
  });

  it("has a table of contents linking to its own sections", () => {
    const toc = section(readme, "Contents");
    expect(toc, 'no "## Contents" section').toBeDefined();
    const targets = [...toc!.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    const anchors = headingAnchors(readme);
    expect(targets.length).toBeGreaterThanOrEqual(6);
    for (const target of targets) expect(anchors.has(target), `#${target}`).toBe(true);
    for (const required of [
      "try-it",
      "build-your-own-agent",
      "what-is-supported",
      "performance",
      "runtime-dependencies",
    ])
      expect(targets).toContain(required);
  });

  it("shows exactly the two set-up commands on its first screen", () => {
    const firstScreen = readme.split("\n").slice(0, 40).join("\n");
    const block = /```sh\n([\s\S]*?)```/.exec(firstScreen)?.[1] ?? "";
    const commands = block
      .split("\n")
      .map((l) => l.replace(/#.*$/, "").trim())
      .filter(Boolean);
    expect(commands).toEqual(["npm ci && npm start", "npm test"]);
  });

  it("says why each runtime dependency is there", () => {
    const pkg = JSON.parse(readRepoFile("package.json")) as { dependencies?: Record<string, string> };
    const deps = section(readme, "Runtime dependencies") ?? "";
    const missing = Object.keys(pkg.dependencies ?? {}).filter((name) => !deps.includes(`\`${name}\``));
    expect(missing, `runtime dependencies the README does not explain: ${missing.join(", ")}`).toEqual([]);
  });

  it("leaves no id placeholders to fill in by hand", () => {
    expect(readme).not.toMatch(/<task ?id>|<run ?id>|<taskId>|<runId>/i);
  });
});
