import { appendFileSync } from "node:fs";

// The HANDLERS_MODULE that `evidence run` gives the instances it starts for the `poison-exhaustion` row
// (evidence-poison.ts), and nothing else: no built-in workflow names its handler and `npm start` never loads
// this file. Its one handler is poison work: it writes one line to the ledger file its node names
// (`params.ledger`), synchronously so the line is on disk before the process goes, then kills its own process
// with SIGKILL, as an out-of-memory kill or a native crash would.

/** The fields of the host's HandlerContext this handler reads (cli/ may not import workflows/). */
interface PoisonContext {
  taskId: string;
  nodeId: string;
  attempt: number;
  params: Record<string, unknown>;
}

/** One line of the ledger: which execution ran, in which process (the witness maps the pid to its incarnation). */
export interface PoisonLedgerLine {
  taskId: string;
  nodeId: string;
  attempt: number;
  pid: number;
}

async function killOwnProcess(ctx: PoisonContext): Promise<never> {
  const ledger = ctx.params["ledger"];
  if (typeof ledger !== "string" || ledger === "")
    throw new Error("the evidence poison node needs params.ledger, the file each execution is written to");
  const line: PoisonLedgerLine = { taskId: ctx.taskId, nodeId: ctx.nodeId, attempt: ctx.attempt, pid: process.pid };
  appendFileSync(ledger, `${JSON.stringify(line)}\n`);
  process.kill(process.pid, "SIGKILL");
  return new Promise<never>(() => undefined);
}

/** The handler's name, as the witness workflow's node names it. */
export const POISON_HANDLER = "evidence-kill-own-process";

export const handlers = { [POISON_HANDLER]: killOwnProcess };
