// docs/architecture.md's table of allowed imports says what .dependency-cruiser.cjs enforces, folder by folder.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const require = createRequire(import.meta.url);

/** The rule set's `layer-<folder>` rules: which folders each folder may import, read back from their `pathNot`. */
function enforced(): Record<string, string[]> {
  const config = require(`${root}.dependency-cruiser.cjs`) as {
    forbidden: Array<{ name: string; to: { pathNot?: string } }>;
  };
  const layers: Record<string, string[]> = {};
  for (const rule of config.forbidden) {
    const folder = /^layer-(.+)$/.exec(rule.name)?.[1];
    if (!folder) continue;
    const allowed = /^\^src\/\((.*)\)\/$/.exec(rule.to.pathNot ?? "")?.[1]?.split("|") ?? [];
    layers[folder] = allowed.filter((f) => f !== folder).sort();
  }
  return layers;
}

/** The table: each row names folders (`a`, `b`) and what they may import, with words in brackets after some names. */
function documented(): Record<string, string[]> {
  const text = readFileSync(`${root}docs/architecture.md`, "utf8");
  const start = text.indexOf("| folder | may import (besides itself) |");
  const rows = text
    .slice(start)
    .split("\n")
    .slice(2)
    .filter((line) => line.startsWith("| "));
  const layers: Record<string, string[]> = {};
  for (const row of rows) {
    const [, folders = "", imports = ""] = row.split("|").map((cell) => cell.trim());
    // Drop the explanations in brackets (which may hold commas), then read the folder names.
    const names = imports
      .replace(/\([^()]*(\([^()]*\)[^()]*)*\)/g, "")
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n && n !== "nothing");
    for (const folder of [...folders.matchAll(/`([a-z0-9]+)`/g)].map((m) => m[1]!)) layers[folder] = [...names].sort();
  }
  return layers;
}

describe("the layer table", () => {
  it("lists every folder with exactly the imports the dependency rules allow", () => {
    expect(documented()).toEqual(enforced());
  });
});
