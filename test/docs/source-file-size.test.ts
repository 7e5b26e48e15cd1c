// "Small files named for what they hold": no source file of src/ (generated code aside), test/support/, bench/,
// scripts/ or examples/ is over 450 lines. A file that grows past it is split along its own seam.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const MAX_LINES = 450;
const SOURCE = /\.(ts|js|mjs|cjs|css)$/;
/** Generated code (buf generate), bench outputs and installed packages are not written by hand. */
const SKIPPED = new Set(["src/gen", "bench/results", "node_modules", "dist"]);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (SKIPPED.has(path) || SKIPPED.has(entry.name)) return [];
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.isFile() && SOURCE.test(entry.name) ? [path] : [];
  });
}

describe("source file size", () => {
  it(`keeps every hand-written source file at ${MAX_LINES} lines or fewer`, () => {
    const files = ["src", "test/support", "bench", "scripts", "examples"].flatMap(sourceFiles);
    // The walk finds the files it is meant to check.
    expect(files).toContain("src/console/assets/console.js");
    expect(files).toContain("test/support/mongo-wire-server/server.ts");
    expect(files.some((f) => f.startsWith("src/gen/"))).toBe(false);
    const over = files
      .map((file) => ({ file, lines: readFileSync(join(ROOT, file), "utf8").split("\n").length - 1 }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines`);
    expect(over).toEqual([]);
  });
});
