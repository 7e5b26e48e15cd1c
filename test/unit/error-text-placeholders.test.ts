// Unfilled placeholders in the texts callers read: a `${...}` inside a plain '...' or "..." string is not
// interpolated, so the caller reads "${subject}" instead of "push". Every string literal of src/ is read from
// the TypeScript syntax tree (template literals are what interpolates, so they are not looked at).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** "file:line: text" for each plain string literal of `code` holding `${`. */
function unfilledPlaceholders(fileName: string, code: string): string[] {
  const file = ts.createSourceFile(fileName, code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) && /\$\{[^}]*\}/.test(node.text)) {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
      found.push(`${fileName}:${line + 1}: ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe("error texts", () => {
  it("no plain string literal in src/ holds a ${...} placeholder (it would reach the caller unfilled)", () => {
    const found = sourceFiles(SRC).flatMap((path) =>
      unfilledPlaceholders(relative(SRC, path), readFileSync(path, "utf8")),
    );
    expect(found).toEqual([]);
  });

  it("the check finds a placeholder in a quoted string and leaves template literals alone", () => {
    const code = [
      `refuse("url", "put credentials in the \${subject} authentication instead");`,
      `refuse('url', 'the \${arm} arm');`,
      'refuse("url", `the ${subject} URL`);',
      "const fine = `a ${'nested'} template`;",
      `const dollars = "costs $5 {per call}";`,
    ].join("\n");
    expect(unfilledPlaceholders("x.ts", code)).toEqual([
      "x.ts:1: put credentials in the ${subject} authentication instead",
      "x.ts:2: the ${arm} arm",
    ]);
  });
});
