import { write } from "node:fs";

/** How much longer than SHUTDOWN_GRACE_MS a whole shutdown may take: the steps after the drain (leases, store, telemetry). */
export const SHUTDOWN_MARGIN_MS = 5_000;
/** After the deadline, how long the note on stderr may take before the process exits anyway. */
const NOTE_MS = 500;

/** The steps of a shutdown in order, so that a deadline can name the one that did not finish. */
export class ShutdownSteps {
  private step: string | undefined;

  /** The step under way, if any. */
  get current(): string | undefined {
    return this.step;
  }

  async run<T>(name: string, step: () => Promise<T>): Promise<T> {
    this.step = name;
    const result = await step();
    this.step = undefined;
    return result;
  }
}

export interface DeadlineOptions {
  /** SHUTDOWN_GRACE_MS: the deadline is this plus SHUTDOWN_MARGIN_MS. */
  graceMs: number;
  steps: ShutdownSteps;
  exit?: (code: number) => void;
}

/**
 * The CLI's hard end to a shutdown (SIGTERM, SIGINT): if the process has not exited SHUTDOWN_GRACE_MS plus
 * SHUTDOWN_MARGIN_MS after the signal, whatever is left (a store that does not answer its close, a handler
 * that ignores its abort signal, an exporter that does not flush), it exits with code 1, saying on stderr (if
 * it still can: asynchronously, waited for at most NOTE_MS) which step did not finish. A process manager's
 * own kill comes later or never; a host that hangs would otherwise hold its port, its leases' renewals and
 * the deploy. Armed when shutdown starts; the timer keeps the process alive until it fires or exit comes first.
 */
export function exitAtShutdownDeadline(options: DeadlineOptions): void {
  const deadlineMs = options.graceMs + SHUTDOWN_MARGIN_MS;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  setTimeout(() => {
    const step = options.steps.current ?? "exiting";
    const line = JSON.stringify({
      level: 60,
      time: Date.now(),
      service: "openwop-a2a-host",
      event: "shutdown.deadline",
      step,
      deadlineMs,
      msg: `shutdown did not finish within ${deadlineMs} ms (SHUTDOWN_GRACE_MS + ${SHUTDOWN_MARGIN_MS} ms): still ${step}; exiting with code 1`,
    });
    const exitNow = (): void => exit(1);
    setTimeout(exitNow, NOTE_MS);
    write(2, line + "\n", exitNow);
  }, deadlineMs);
}
