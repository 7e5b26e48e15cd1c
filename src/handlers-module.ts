import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { TaskHandler } from "./workflows/workflow-types.js";

/**
 * HANDLERS_MODULE: an ES module whose named export `handlers` (or default export) maps handler names to
 * TaskHandlers, so users of the container or of `npx openwop-a2a-host` add logic without building this package.
 * A path is resolved from the working directory. Every way it can fail is a problem naming the path.
 */
export async function loadHandlersModule(specifier: string): Promise<{ handlers: Record<string, TaskHandler>; problems: string[] }> {
  const path = resolve(specifier);
  const none = { handlers: {}, problems: [] as string[] };
  if (!existsSync(path)) return { ...none, problems: [`HANDLERS_MODULE ${path}: no such file`] };
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    return { ...none, problems: [`HANDLERS_MODULE ${path}: importing it failed: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}`] };
  }
  const map = module["handlers"] ?? module["default"];
  if (typeof map !== "object" || map === null || Array.isArray(map)) {
    return { ...none, problems: [`HANDLERS_MODULE ${path}: exports no handler map (expected \`export const handlers = { name: async (ctx) => ({ output }) }\` or a default export of that shape)`] };
  }
  const handlers: Record<string, TaskHandler> = {};
  const problems: string[] = [];
  for (const [name, handler] of Object.entries(map)) {
    if (typeof handler === "function") handlers[name] = handler as TaskHandler;
    else problems.push(`HANDLERS_MODULE ${path}: handler "${name}" is a ${handler === null ? "null" : typeof handler}, not a function`);
  }
  if (Object.keys(handlers).length === 0 && problems.length === 0) problems.push(`HANDLERS_MODULE ${path}: its handler map is empty`);
  return { handlers, problems };
}
