/** One sample of the Prometheus text format. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus text format: `name{labels} value` lines, comments skipped; a line it cannot read throws. */
export function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}
