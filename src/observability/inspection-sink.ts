import { appendFileSync } from "node:fs";

/**
 * Where XState inspection records go (XSTATE_INSPECT_FILE): one JSON object per line, appended to a file,
 * or written to standard error for "-". Synchronous on purpose: records of one task stay in order and a
 * crash loses none of them; inspection is a developer tool, never on in production by default.
 */
export function createInspectionSink(target: string): (record: object) => void {
  if (target === "-") return (record) => process.stderr.write(`${JSON.stringify(record)}\n`);
  return (record) => appendFileSync(target, `${JSON.stringify(record)}\n`, "utf8");
}
