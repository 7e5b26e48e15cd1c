// Prints the task machine for the Stately visualizer: as XState JSON config (the default), or with
// `--format ts` as a `createMachine({...}, { guards, actions })` module for Stately's "Import from code".
// With a path argument the output is written to that file instead. Use `npm run --silent` so that npm's
// banner does not land in stdout.
//
//   npm run --silent machine:export                               # JSON on stdout
//   npm run --silent machine:export -- --format ts > machine.ts   # the code module on stdout
//   npm run --silent machine:export -- docs/machine.json          # written there (relative to where npm ran)
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { exportTaskMachine } from "../src/machine/machine-export.js";
import { exportTaskMachineModule } from "../src/machine/machine-export-module.js";

const USAGE = "usage: tsx scripts/export-machine.ts [--format json|ts] [output-file]\n";

async function main(argv: string[]): Promise<number> {
  let format = "json";
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h" || arg === "--help") {
      process.stdout.write(USAGE);
      return 0;
    }
    if (arg === "--format") format = argv[++i] ?? "";
    else if (arg.startsWith("--format=")) format = arg.slice("--format=".length);
    else rest.push(arg);
  }
  if (rest.length > 1 || (format !== "json" && format !== "ts")) {
    process.stderr.write(USAGE);
    return 2;
  }
  const [target] = rest;
  const text = format === "ts" ? exportTaskMachineModule() : `${JSON.stringify(exportTaskMachine(), null, 2)}\n`;
  if (target === undefined || target === "-") {
    process.stdout.write(text);
    return 0;
  }
  // Under `npm run`, the cwd is the package root; INIT_CWD is where the command was typed.
  const path = resolve(process.env["INIT_CWD"] ?? process.cwd(), target);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text, "utf8");
  process.stderr.write(`task machine written to ${path}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`export-machine: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
