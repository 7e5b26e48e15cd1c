import { didYouMean } from "../domain/closest-name.js";
import { KEYS_FORMATS, type KeysFormat } from "./keys-output.js";

/** What the command line asks for. No arguments: start the host (what `npm start` and the image run). */
export type CliCommand =
  | { kind: "start" }
  | { kind: "check" }
  | { kind: "init"; dir: string }
  | { kind: "keys"; format: KeysFormat }
  | { kind: "evidence-run"; options: Record<string, string> }
  | { kind: "evidence-verify"; file: string; discovery?: string }
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "usage"; problem: string };

const COMMANDS: Record<string, CliCommand["kind"]> = {
  start: "start",
  check: "check",
  init: "init",
  keys: "keys",
  evidence: "evidence-run",
  help: "help",
  "--help": "help",
  "-h": "help",
  version: "version",
  "--version": "version",
  "-v": "version",
};

/**
 * `argv` without node and the script. Settings are never arguments: they come from the environment; only `init`
 * takes a folder and `keys` its output format.
 */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  // `--help` / `--version` anywhere win, so `check --help` shows the help instead of running the check.
  if (argv.some((a) => COMMANDS[a] === "help")) return { kind: "help" };
  if (argv.some((a) => COMMANDS[a] === "version")) return { kind: "version" };
  if (argv.length === 0) return { kind: "start" };
  const [first, ...rest] = argv as [string, ...string[]];
  const kind = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (kind === undefined)
    return { kind: "usage", problem: `unknown command "${first}"${didYouMean(first, Object.keys(COMMANDS))}` };
  if (kind === "init") {
    if (rest.length > 1 || rest[0]?.startsWith("-"))
      return {
        kind: "usage",
        problem: `"init" takes one folder and no options (got ${rest.map((a) => `"${a}"`).join(" ")})`,
      };
    return { kind: "init", dir: rest[0] ?? "." };
  }
  if (kind === "keys") return keysCommand(rest);
  if (kind === "evidence-run") return evidenceCommand(rest);
  if (rest.length > 0) {
    return {
      kind: "usage",
      problem: `"${first}" takes no arguments (got ${rest.map((a) => `"${a}"`).join(" ")}); settings come from the environment (docs/configuration.md)`,
    };
  }
  return { kind } as CliCommand;
}

/** `keys`, `keys --format kubernetes`, `keys --format=env`. */
function keysCommand(rest: readonly string[]): CliCommand {
  const args = rest.flatMap((a) => (a.startsWith("--format=") ? ["--format", a.slice("--format=".length)] : [a]));
  if (args.length === 0) return { kind: "keys", format: "env" };
  const format = KEYS_FORMATS.find((f) => f === args[1]);
  if (args.length === 2 && args[0] === "--format" && format) return { kind: "keys", format };
  return {
    kind: "usage",
    problem: `"keys" takes --format ${KEYS_FORMATS.join(" or ")} and nothing else (got ${rest.map((a) => `"${a}"`).join(" ")})`,
  };
}

const EVIDENCE_RUN_OPTIONS = ["--out", "--instances", "--build", "--accept-skill", "--discovery-url", "--api-key-file"];

/** `evidence run [--out f] [--instances n] [--build kind:id] [--discovery-url u] [--api-key-file f]`, `evidence verify <file> [--discovery u|f]`. */
function evidenceCommand(rest: readonly string[]): CliCommand {
  const [sub, ...args] = rest;
  const pairs = args.flatMap((a) =>
    a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a],
  );
  const options: Record<string, string> = {};
  const positional: string[] = [];
  for (let i = 0; i < pairs.length; i++) {
    const arg = pairs[i]!;
    if (!arg.startsWith("--")) positional.push(arg);
    else if (pairs[i + 1] === undefined)
      return { kind: "usage", problem: `"evidence ${sub ?? ""}": ${arg} needs a value` };
    else options[arg] = pairs[++i]!;
  }
  if (sub === "run") {
    const unknown = Object.keys(options).find((o) => !EVIDENCE_RUN_OPTIONS.includes(o));
    if (unknown || positional.length > 0)
      return {
        kind: "usage",
        problem: `"evidence run" takes ${EVIDENCE_RUN_OPTIONS.join(", ")} (got ${unknown ?? positional[0]})`,
      };
    return { kind: "evidence-run", options };
  }
  if (sub === "verify") {
    const unknown = Object.keys(options).find((o) => o !== "--discovery");
    if (unknown || positional.length !== 1)
      return {
        kind: "usage",
        problem: '"evidence verify" takes one bundle file and optionally --discovery <url or file>',
      };
    return {
      kind: "evidence-verify",
      file: positional[0]!,
      ...(options["--discovery"] ? { discovery: options["--discovery"] } : {}),
    };
  }
  return {
    kind: "usage",
    problem: `"evidence" takes "run" or "verify" (got ${sub === undefined ? "nothing" : `"${sub}"`})`,
  };
}
