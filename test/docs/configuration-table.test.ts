import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { documentedVariables, READ_BY_LIBRARIES } from "../../src/config/known-variables.js";
import { FILE_SETTINGS, SECRET_VARIABLES } from "../../src/config/secret-files.js";
import { readRepoFile, repoRoot } from "./markdown.js";

/**
 * docs/configuration.md has ONE table of every environment variable (name | default | meaning). This test
 * collects the names src/ reads and the names the table lists, and fails naming what is missing on either side.
 * The table's parser is the host's own (src/config/known-variables.ts): the same list warns about typos at start.
 */

/** The EnvReader methods that take a variable name first (`raw`, `int`, `url`, ...), read off the class itself. */
export function envReaderMethods(envSettingsSource: string): string[] {
  const methods = new Set<string>();
  for (const match of envSettingsSource.matchAll(
    /^\s+(?:(?:public|private|protected|static|async)\s+)*([a-zA-Z_]\w*)\s*(?:<[^>(]*>)?\(\s*name\s*:\s*string\b/gm,
  )) {
    methods.add(match[1]!);
  }
  return [...methods].sort();
}

/**
 * Variable names one TypeScript source reads: `<anything>.<reader method>("NAME"`, `env["NAME"]`, `env.NAME`,
 * `process.env.NAME` / `process.env["NAME"]` (any identifier ending in env/Env, optional chaining included),
 * and in settings loaders (`*-settings.ts`, `config/config.ts`) any call with an upper-case name as its first
 * argument (local helpers such as `text("AGENT_NAME")`). A template literal (`env[\`OTEL_${signal}_EXPORTER\`]`)
 * is returned as a pattern with `*` for each interpolation.
 */
export function variablesRead(source: string, methods: readonly string[], isSettingsLoader: boolean): string[] {
  const names = new Set<string>();
  const NAME = "([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)";
  const patterns = [
    new RegExp(`\\.(?:${methods.join("|")})\\(\\s*["'\`]${NAME}["'\`]`, "g"),
    new RegExp(`\\b\\w*[eE]nv\\??\\.?\\[\\s*["'\`]${NAME}["'\`]\\s*\\]`, "g"),
    new RegExp(`\\b\\w*[eE]nv\\??\\.${NAME}\\b`, "g"),
  ];
  if (isSettingsLoader) patterns.push(new RegExp(`\\b\\w+\\(\\s*["'\`]${NAME}["'\`]`, "g"));
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) names.add(match[1]!);
  for (const match of source.matchAll(/\b\w*[eE]nv\??\.?\[\s*`([A-Z][A-Z0-9_]*\$\{[^`]*)`\s*\]/g)) {
    names.add(match[1]!.replace(/\$\{[^}]*\}/g, "*"));
  }
  return [...names].sort();
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) {
      if (entry !== "gen") files.push(...sourceFiles(path));
    } else if (entry.endsWith(".ts") && !entry.endsWith(".d.ts")) files.push(path);
  }
  return files;
}

/** Every variable src/ reads, with the files that read it. */
export function variablesReadBySrc(): Map<string, string[]> {
  const methods = envReaderMethods(readRepoFile("src/domain/env-settings.ts"));
  const found = new Map<string, string[]>();
  for (const file of sourceFiles(join(repoRoot, "src"))) {
    const rel = relative(repoRoot, file);
    const settingsLoader = /-settings\.ts$/.test(rel) || rel === join("src", "config", "config.ts");
    for (const name of variablesRead(readFileSync(file, "utf8"), methods, settingsLoader))
      found.set(name, [...(found.get(name) ?? []), rel]);
  }
  // `<NAME>_FILE` of every secret variable (and long setting) is read by name from the list, not spelled out in a source.
  for (const name of [...SECRET_VARIABLES, ...FILE_SETTINGS])
    found.set(`${name}_FILE`, [join("src", "config", "secret-files.ts")]);
  return found;
}

function covered(name: string, documented: Set<string>): boolean {
  if (documented.has(name)) return true;
  if (name.startsWith("OTEL_") && documented.has("OTEL_*")) return true;
  if (name.includes("*")) {
    const pattern = new RegExp(`^${name.replace(/\*/g, "[A-Z0-9_]+")}$`);
    return [...documented].some((d) => pattern.test(d));
  }
  return false;
}

describe("the extractor", () => {
  const methods = envReaderMethods(readRepoFile("src/domain/env-settings.ts"));

  it("reads the EnvReader's methods off the class", () => {
    expect(methods).toEqual(expect.arrayContaining(["raw", "int", "bool", "url", "oneOf", "list", "ports"]));
    expect(methods).not.toContain("problem");
  });

  it("finds every way a variable is read", () => {
    const source = [
      'const a = reader.raw("A_RAW"); const b = env.int("B_INT", 1, 0); const c = r.oneOf("C_ONE", ["x"], "x");',
      'env.bool("D_BOOL", false); env.list("E_LIST"); env.ports("F_PORTS"); env.url("G_URL", "http://x");',
      'const h = env["H_INDEX"]; const i = process.env.I_DOT; const j = process.env["J_INDEX"]; const k = options.env?.["K_OPT"];',
      "const l = env[`OTEL_${signal}_EXPORTER`]; const m = env.M_DOT;",
      'env.problem("NOT_A_VARIABLE must be set"); headers["X_NOT_ENV"]; log("ALSO_NOT");',
    ].join("\n");
    expect(variablesRead(source, methods, false)).toEqual([
      "A_RAW",
      "B_INT",
      "C_ONE",
      "D_BOOL",
      "E_LIST",
      "F_PORTS",
      "G_URL",
      "H_INDEX",
      "I_DOT",
      "J_INDEX",
      "K_OPT",
      "M_DOT",
      "OTEL_*_EXPORTER",
    ]);
    expect(variablesRead('const text = (n) => env.raw(n); text("AGENT_NAME");', methods, true)).toEqual(["AGENT_NAME"]);
  });

  it("finds variables src/ is known to read", () => {
    const read = variablesReadBySrc();
    for (const name of [
      "PORT",
      "HOST",
      "MONGODB_URI",
      "API_KEYS",
      "AUTH",
      "PUSH_ENCRYPTION_KEY",
      "PUSH_ALLOWED_PORTS",
      "AGENT_CARD_BARE",
      "NODE_ENV",
      "LOG_LEVEL",
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "MONGOMS_DOWNLOAD_URL",
    ]) {
      expect(read.has(name), `${name} not found in src/`).toBe(true);
    }
  });

  it("reads the table's names", () => {
    const { names, tables } = documentedVariables(
      "| Variable | Default | Meaning |\n| --- | --- | --- |\n| `A_B` / `C` | `1` | x `NOT_ME` |\n| `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER=none` | – | y |\n| `OTEL_*` | – | z |\n",
    );
    expect(tables).toBe(1);
    expect([...names].sort()).toEqual(["A_B", "C", "OTEL_*", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"]);
  });
});

describe("docs/configuration.md", () => {
  const { names: documented, tables } = documentedVariables(readRepoFile("docs/configuration.md"));
  const read = variablesReadBySrc();

  it("has exactly one variable table", () => {
    expect(tables).toBe(1);
  });

  it("documents every variable src/ reads", () => {
    const missing = [...read.keys()]
      .filter((name) => !covered(name, documented))
      .map((name) => `${name} (read in ${read.get(name)!.join(", ")})`);
    expect(missing, `not in docs/configuration.md:\n${missing.join("\n")}`).toEqual([]);
  });

  it("documents no variable src/ does not read (except the standard OTEL_* and MONGOMS_* ones libraries read)", () => {
    const readNames = [...read.keys()];
    const stale = [...documented].filter(
      (name) => !READ_BY_LIBRARIES.test(name) && name !== "OTEL_*" && !readNames.includes(name),
    );
    expect(stale, `in docs/configuration.md but read nowhere in src/:\n${stale.join("\n")}`).toEqual([]);
  });
});
