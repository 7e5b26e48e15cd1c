import { readFileSync } from "node:fs";
import { join } from "node:path";
import { closestName } from "../domain/closest-name.js";
import type { Env } from "../domain/env-settings.js";
import { projectRoot } from "../domain/project-root.js";

/**
 * The variables the host reads, for catching typos (`PUSH_ENABLE` for `PUSH_ENABLED`). The one list is the table of
 * docs/configuration.md, shipped with the package (and the image); test/docs/configuration-table.test.ts keeps it
 * equal to what src/ reads. Without the file (a trimmed install) nothing is checked.
 */

/** The names in the first column of the table (several per row allowed: `A` / `B`, `X=none`; `OTEL_*` a pattern). */
export function documentedVariables(markdown: string): { names: Set<string>; tables: number } {
  const lines = markdown.split("\n");
  const headers = lines
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => /^\|\s*Variable\s*\|\s*Default\s*\|\s*Meaning\s*\|\s*$/.test(line));
  const names = new Set<string>();
  for (const { i } of headers) {
    for (let row = i + 2; row < lines.length && lines[row]!.startsWith("|"); row++) {
      const first = lines[row]!.split("|")[1] ?? "";
      for (const match of first.matchAll(/`([A-Z][A-Z0-9_]*(?:\*)?)(?:=[^`]*)?`/g)) names.add(match[1]!);
    }
  }
  return { names, tables: headers.length };
}

/** Standard variables read by libraries rather than by our code (the OpenTelemetry SDK, mongodb-memory-server). */
export const READ_BY_LIBRARIES = /^(OTEL_|MONGOMS_)/;

let cached: Set<string> | null | undefined;

/** The documented names, or undefined when docs/configuration.md is not there. */
export function knownVariables(): ReadonlySet<string> | undefined {
  if (cached === undefined) {
    try {
      cached = documentedVariables(readFileSync(join(projectRoot, "docs", "configuration.md"), "utf8")).names;
    } catch {
      cached = null;
    }
  }
  return cached ?? undefined;
}

function isKnown(name: string, known: ReadonlySet<string>, workflowVariables: readonly string[]): boolean {
  return known.has(name) || READ_BY_LIBRARIES.test(name) || workflowVariables.includes(name);
}

/** A variable that is set but not read, and the one it is probably meant to be. */
export interface NearVariable {
  variable: string;
  suggestion: string;
}

export interface VariableCheck {
  /** Process environment variables one typo away from one we read (same prefix): a warning, the start goes on. */
  warnings: NearVariable[];
  /** `startHost({ env })` names we do not read: errors, as unknown option keys are. */
  problems: string[];
}

/**
 * Checks the names of the process environment and of `startHost({ env })`. The process environment holds
 * everything else on the machine too (PATH, HOME, …), so only a name with the prefix of one we read (`PUSH_`)
 * and a few edits from it is flagged; `options.env` is ours alone, so any unknown name there is a problem.
 * A name that differs from one of ours in a single word, by a typo, is flagged too, whatever the word
 * (`WORKFLOW_DIR` for `WORKFLOWS_DIR`, `MONGO_URI` for `MONGODB_URI`). Names listed in WORKFLOW_VARIABLES are
 * read too (by workflows).
 */
export function checkVariableNames(
  processEnv: Env,
  optionsEnv: Env | undefined,
  workflowVariables: readonly string[],
  known = knownVariables(),
): VariableCheck {
  const result: VariableCheck = { warnings: [], problems: [] };
  if (!known) return result;
  const names = [...known].filter((n) => !n.includes("*"));
  for (const name of Object.keys(optionsEnv ?? {})) {
    if (isKnown(name, known, workflowVariables)) continue;
    const near = closestName(name, names);
    result.problems.push(
      `option env.${name}: not a variable openwop-a2a-host reads (${near ? `did you mean ${near}? ` : ""}see docs/configuration.md)`,
    );
  }
  for (const name of Object.keys(processEnv)) {
    if (optionsEnv && Object.hasOwn(optionsEnv, name)) continue;
    if (!/^[A-Z][A-Z0-9]*_[A-Z0-9_]*$/.test(name) || isKnown(name, known, workflowVariables)) continue;
    const prefix = name.slice(0, name.indexOf("_") + 1);
    const near =
      closestName(
        name,
        names.filter((n) => n.startsWith(prefix)),
      ) ?? oneWordAway(name, names);
    if (near) result.warnings.push({ variable: name, suggestion: near });
  }
  return result;
}

/**
 * The name of ours that `name` matches word for word but one, that one a few edits away (`HANDLER_MODULE` →
 * `HANDLERS_MODULE`); undefined when none or more than one fits.
 */
function oneWordAway(name: string, names: readonly string[]): string | undefined {
  const words = name.split("_");
  const fits = names.filter((candidate) => {
    const theirs = candidate.split("_");
    if (theirs.length !== words.length) return false;
    const differing = words.flatMap((word, i) => (word === theirs[i] ? [] : [i]));
    return differing.length === 1 && closestName(words[differing[0]!]!, [theirs[differing[0]!]!]) !== undefined;
  });
  return fits.length === 1 ? fits[0] : undefined;
}
