#!/usr/bin/env node
// Checks that the committed generated code in src/gen/ is exactly what `buf generate` produces from
// proto/ today (npm run proto:check). It regenerates into a temporary directory, so the working tree
// is never touched, and compares every file in both directions.
//
// Exit codes: 0 = up to date, 1 = src/gen differs (run npm run proto:gen), 2 = buf itself failed.
// console and process are imported explicitly: eslint.config.js declares no Node globals for .mjs.
import { spawnSync } from "node:child_process";
import console from "node:console";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const generatedDir = "src/gen"; // must match `out:` in buf.gen.yaml

/** The buf CLI installed with @bufbuild/buf (a node launcher), else `buf` from PATH. */
function bufCommand() {
  try {
    const launcher = createRequire(import.meta.url).resolve("@bufbuild/buf/bin/buf");
    return { command: process.execPath, prefix: [launcher] };
  } catch {
    return { command: "buf", prefix: [] };
  }
}

/** Relative paths (with "/" separators) of every file below dir; empty if dir does not exist. */
function listFiles(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) {
      out.push(relative(dir, join(entry.parentPath, entry.name)).split(sep).join("/"));
    }
  }
  return out.sort();
}

/** Regenerates into `tmp` and compares with src/gen; returns the exit code. */
function check(tmp) {
  const { command, prefix } = bufCommand();
  // --output makes every `out:` of buf.gen.yaml relative to the temporary directory.
  const result = spawnSync(command, [...prefix, "generate", "--output", tmp], {
    cwd: root,
    encoding: "utf8",
  });
  if (result.error || result.status !== 0) {
    console.error("buf generate failed:");
    console.error(result.error?.message ?? result.stderr ?? "");
    return 2;
  }

  const expectedDir = join(tmp, generatedDir);
  const actualDir = join(root, generatedDir);
  const expected = listFiles(expectedDir);
  const actual = new Set(listFiles(actualDir));

  const differing = [];
  const missing = [];
  for (const file of expected) {
    if (!actual.has(file)) {
      missing.push(file);
      continue;
    }
    actual.delete(file);
    if (!readFileSync(join(expectedDir, file)).equals(readFileSync(join(actualDir, file)))) {
      differing.push(file);
    }
  }
  const extra = [...actual];

  if (differing.length + missing.length + extra.length === 0) {
    console.log(`generated code is up to date (${expected.length} files in ${generatedDir}/)`);
    return 0;
  }
  console.error(`${generatedDir}/ is out of date with proto/:`);
  for (const file of differing) console.error(`  differs: ${generatedDir}/${file}`);
  for (const file of missing) console.error(`  missing: ${generatedDir}/${file}`);
  for (const file of extra) console.error(`  extra:   ${generatedDir}/${file} (not produced by buf generate)`);
  console.error("hint: run npm run proto:gen");
  return 1;
}

const tmp = mkdtempSync(join(tmpdir(), "proto-check-"));
let code;
try {
  code = check(tmp);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(code);
