import { write, writeSync } from "node:fs";

/** Log bytes that may wait for a slow reader; past it new lines are dropped (and counted) rather than held. */
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/** A full non-blocking pipe (EAGAIN) is tried again after this long. */
const RETRY_MS = 10;
/** At exit, how long in all a full pipe (EAGAIN) may hold back the last lines before they are dropped. */
const EXIT_FLUSH_MS = 1_000;

/**
 * Where the log lines go (a file descriptor: stdout). Writes are asynchronous (`fs.write` on the thread pool;
 * lines logged while one is under way go out together in the next), so logging never blocks the event loop.
 * A write that fails for any reason but a full pipe (EAGAIN) means the reader is gone (EPIPE: a log shipper, a
 * terminal or a parent process that went away): from then on lines are dropped, never retried, and one note
 * goes to stderr if it still can. At process exit what is still waiting is written synchronously, giving a
 * full pipe at most EXIT_FLUSH_MS and a broken one nothing.
 *
 * It replaces pino's default destination (sonic-boom 4.2.1), whose exit flush retries every failed write
 * forever (`flushSync` sleeps and retries on EPIPE too): a host whose log reader had gone never exited.
 */
export class LogDestination {
  private pending: string[] = [];
  private pendingBytes = 0;
  /** The bytes being written: in the thread pool (`writing`) or waiting to be tried again. */
  private current: Buffer | undefined;
  private writing = false;
  private retry: NodeJS.Timeout | undefined;
  private gone = false;
  /** Lines dropped: the reader gone, or more than MAX_PENDING_BYTES behind. */
  dropped = 0;

  constructor(private readonly fd: number) {}

  /** pino's destination interface. */
  write(line: string): boolean {
    if (this.gone || this.pendingBytes + line.length > MAX_PENDING_BYTES) {
      this.dropped++;
      return true;
    }
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.current === undefined) this.next();
    return true;
  }

  /** Writes what waits now, synchronously and bounded (at exit): a reader that is gone costs nothing. */
  flushSync(): void {
    clearTimeout(this.retry);
    // A write in the thread pool cannot be waited for (it completes on its own); the lines after it still go
    // out, possibly ahead of it (sonic-boom does the same).
    const rest = [
      ...(this.current && !this.writing ? [this.current] : []),
      ...(this.pending.length > 0 ? [Buffer.from(this.pending.join(""))] : []),
    ];
    this.pending = [];
    this.pendingBytes = 0;
    this.current = undefined;
    let data = Buffer.concat(rest);
    const until = Date.now() + EXIT_FLUSH_MS;
    while (data.length > 0 && !this.gone) {
      try {
        data = data.subarray(writeSync(this.fd, data));
      } catch (err) {
        if (errorCode(err) !== "EAGAIN" || Date.now() >= until) return this.readerGone(err, false);
        Atomics.wait(SLEEP, 0, 0, RETRY_MS);
      }
    }
  }

  private next(): void {
    this.current = Buffer.from(this.pending.length === 1 ? this.pending[0]! : this.pending.join(""));
    this.pending = [];
    this.pendingBytes = 0;
    this.writeCurrent();
  }

  private writeCurrent(): void {
    const data = this.current!;
    this.writing = true;
    write(this.fd, data, 0, data.length, null, (err, written) => {
      this.writing = false;
      if (this.current !== data) return; // flushed at exit meanwhile
      if (err) {
        if (err.code === "EAGAIN") this.retry = setTimeout(() => this.writeCurrent(), RETRY_MS);
        else this.readerGone(err, true);
        return;
      }
      if (written < data.length) {
        this.current = data.subarray(written);
        this.writeCurrent();
        return;
      }
      this.current = undefined;
      if (this.pending.length > 0) this.next();
    });
  }

  private readerGone(err: unknown, noteOnStderr: boolean): void {
    if (this.gone) return;
    this.gone = true;
    this.dropped += this.pending.length + (this.current ? 1 : 0);
    this.pending = [];
    this.pendingBytes = 0;
    this.current = undefined;
    if (!noteOnStderr || this.fd === 2) return;
    const line = JSON.stringify({
      level: 40,
      time: Date.now(),
      service: "openwop-a2a-host",
      event: "log.reader-gone",
      code: errorCode(err),
      msg: "the log reader is gone: log lines are dropped from now on",
    });
    // Asynchronous, errors ignored: stderr may be gone too, or a pipe nobody reads.
    write(2, line + "\n", () => {});
  }
}

const SLEEP = new Int32Array(new SharedArrayBuffer(4));

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

let stdout: LogDestination | undefined;

/** The process's one stdout destination, flushed (bounded) when the process exits. */
export function stdoutDestination(): LogDestination {
  if (stdout) return stdout;
  const destination = (stdout = new LogDestination(1));
  process.once("exit", () => destination.flushSync());
  return destination;
}
