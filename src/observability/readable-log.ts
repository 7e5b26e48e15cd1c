/**
 * One readable line per log record, for a person at a terminal (`12:04:05 WARN  message key=value …`); pipes and
 * files keep pino's JSON, which log pipelines parse. No dependency: pino hands us each record as a JSON line.
 */

const LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };

/** Fields every line has, or that the line shows in its own place. */
const SHOWN_APART = new Set(["level", "time", "pid", "hostname", "service", "msg", "instanceId", "reason", "problems"]);

function value(v: unknown): string {
  if (typeof v === "string") return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (v !== null && typeof v === "object" && typeof (v as { message?: unknown }).message === "string")
    return JSON.stringify((v as { message: string }).message);
  return JSON.stringify(v);
}

/** One pino JSON record as a readable line; a multi-line `reason` (every problem of a failed start) follows it, indented. */
export function readableLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith("\n") ? json : `${json}\n`;
  }
  const time = typeof record["time"] === "number" ? new Date(record["time"]).toISOString().slice(11, 19) : "";
  const level = (LEVELS[record["level"] as number] ?? String(record["level"])).padEnd(5);
  const fields = Object.entries(record)
    .filter(([k, v]) => !SHOWN_APART.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${value(v)}`);
  const reason = typeof record["reason"] === "string" ? record["reason"] : undefined;
  const head = [time, level, typeof record["msg"] === "string" ? record["msg"] : "", ...fields]
    .filter((s) => s !== "")
    .join(" ");
  if (reason === undefined) return `${head}\n`;
  return `${head}\n${reason
    .split("\n")
    .map((l) => `    ${l}`)
    .join("\n")}\n`;
}

/** A pino destination writing readable lines to `out`. */
export function readableDestination(out: { write(chunk: string): boolean }): { write(chunk: string): boolean } {
  return { write: (chunk: string) => out.write(readableLine(chunk.trimEnd())) };
}
