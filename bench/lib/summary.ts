import { cpus } from "node:os";

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

export function latencySummary(latenciesMs: number[]): { p50Ms: number; p99Ms: number } {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return { p50Ms: round2(percentile(sorted, 50)), p99Ms: round2(percentile(sorted, 99)) };
}

export const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

export function machine(): Record<string, unknown> {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model ?? "unknown",
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

/** A plain-text table: one header row, then one row per record, columns padded to fit. */
export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [
    headers,
    ...rows.map((r) => r.map((c) => (typeof c === "number" && Number.isNaN(c) ? "–" : String(c)))),
  ];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
    .join("\n");
}
