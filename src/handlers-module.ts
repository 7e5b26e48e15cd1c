import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { TaskHandler } from "./workflows/workflow-types.js";

/**
 * HANDLERS_MODULE: an ES module whose named export `handlers` (or default export) maps handler names to
 * TaskHandlers, and whose named export `nodeKinds`, if any, lists node kinds of its own (docs/node-kinds.md), so users of the container or of `npx openwop-a2a-host` add logic without building this package.
 * A path is resolved from the working directory. A TypeScript module (.ts, .mts, .cts) is loaded through the
 * user's own tsx (see importTypeScript). Every way it can fail is a problem naming the path.
 */
export async function loadHandlersModule(
  specifier: string,
): Promise<{ handlers: Record<string, TaskHandler>; nodeKinds: unknown[]; problems: string[] }> {
  const path = resolve(specifier);
  const none = { handlers: {}, nodeKinds: [], problems: [] as string[] };
  if (!existsSync(path)) return { ...none, problems: [`HANDLERS_MODULE ${path}: no such file`] };
  let module: Record<string, unknown>;
  try {
    if (TYPESCRIPT.test(path)) {
      const imported = await importTypeScript(path);
      if (typeof imported === "string") return { ...none, problems: [`HANDLERS_MODULE ${path}: ${imported}`] };
      module = imported;
    } else module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    return {
      ...none,
      problems: [
        `HANDLERS_MODULE ${path}: importing it failed: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`,
      ],
    };
  }
  const kinds = module["nodeKinds"];
  if (kinds !== undefined && !Array.isArray(kinds))
    return {
      ...none,
      problems: [
        `HANDLERS_MODULE ${path}: its nodeKinds export must be an array of node kinds (\`export const nodeKinds = [llm]\`)`,
      ],
    };
  const nodeKinds = (kinds ?? []) as unknown[];
  const map = module["handlers"] ?? module["default"] ?? (nodeKinds.length > 0 ? {} : undefined);
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    return {
      ...none,
      problems: [
        `HANDLERS_MODULE ${path}: exports no handler map (expected \`export const handlers = { name: async (ctx) => ({ output }) }\` or a default export of that shape)`,
      ],
    };
  }
  const handlers: Record<string, TaskHandler> = {};
  const problems: string[] = [];
  for (const [name, handler] of Object.entries(map)) {
    if (typeof handler === "function") handlers[name] = handler as TaskHandler;
    else
      problems.push(
        `HANDLERS_MODULE ${path}: handler "${name}" is a ${handler === null ? "null" : typeof handler}, not a function`,
      );
  }
  if (Object.keys(handlers).length === 0 && nodeKinds.length === 0 && problems.length === 0)
    problems.push(`HANDLERS_MODULE ${path}: its handler map is empty`);
  return { handlers, nodeKinds, problems };
}

const TYPESCRIPT = /\.[mc]?ts$/;

/**
 * A TypeScript handlers module, imported through tsx's ESM API (`tsImport`) as found from the working directory,
 * i.e. the user's project: tsx is theirs (its version, their tsconfig), never a dependency of the host. Without
 * it, the problem (a string) says what to install.
 */
async function importTypeScript(path: string): Promise<Record<string, unknown> | string> {
  let manifest: string;
  try {
    manifest = createRequire(join(process.cwd(), "package.json")).resolve("tsx/package.json");
  } catch {
    return `a TypeScript module needs tsx in your project (not found from ${process.cwd()}): run \`npm install --save-dev tsx\` there, or compile the handlers to JavaScript`;
  }
  // Its entries, by hand: require.resolve would give the CommonJS ones, which cannot register tsx's ESM hooks.
  const exports = (
    JSON.parse(readFileSync(manifest, "utf8")) as { exports?: Record<string, { import?: { default?: string } }> }
  ).exports;
  const api = loadsAsCommonJs(path) ? "./cjs/api" : "./esm/api";
  const entry = exports?.[api]?.import?.default;
  if (!entry)
    return `the tsx of your project (${dirname(manifest)}) has no ${api.slice(2)} API (tsx/${api.slice(2)}): install tsx 4 or newer`;
  const loaded = (await import(pathToFileURL(join(dirname(manifest), entry)).href)) as {
    tsImport?: (specifier: string, parentURL: string) => Promise<Record<string, unknown>>;
    require?: (id: string, fromFile: string) => Record<string, unknown>;
  };
  // A CommonJS module through tsx's require hook: through tsImport it would run from a `data:` URL, and a
  // handler's stack trace would name that URL instead of its file and line.
  // Traces through tsx's source maps, so they name the .ts file's own lines (tsx's CLI does the same).
  process.setSourceMapsEnabled(true);
  if (api === "./cjs/api") return loaded.require!(path, import.meta.url);
  return loaded.tsImport!(pathToFileURL(path).href, import.meta.url);
}

/** `.cts`, or `.ts` in a package whose nearest package.json does not say `"type": "module"`: Node's own rule. */
function loadsAsCommonJs(path: string): boolean {
  if (path.endsWith(".cts")) return true;
  if (path.endsWith(".mts")) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type !== "module";
      } catch {
        return true;
      }
    }
    if (dirname(dir) === dir) return true;
  }
}
