// Prints the task machine as XState JSON config (pretty), for the Stately visualizer (stately.ai/viz,
// Studio "import from JSON"). With a path argument the JSON is written to that file instead.
//
//   npm run machine:export                      # JSON on stdout
//   npm run machine:export -- docs/machine.json # written to docs/machine.json (relative to where npm ran)
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { exportTaskMachine } from "../src/machine/machine-export.js";

async function main(argv: string[]): Promise<number> {
  const [target, ...rest] = argv;
  if (rest.length > 0 || target === "-h" || target === "--help") {
    process.stderr.write("usage: tsx scripts/export-machine.ts [output.json]\n");
    return target === "-h" || target === "--help" ? 0 : 2;
  }
  const json = `${JSON.stringify(exportTaskMachine(), null, 2)}\n`;
  if (target === undefined || target === "-") {
    process.stdout.write(json);
    return 0;
  }
  // Under `npm run`, the cwd is the package root; INIT_CWD is where the command was typed.
  const path = resolve(process.env["INIT_CWD"] ?? process.cwd(), target);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, json, "utf8");
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
