/**
 * JSON with object keys sorted at every level and undefined members dropped, so equal values hash equally
 * whatever their key order. `undefined` inside an array reads as `null`, exactly as JSON.stringify writes
 * it, so a value and its JSON round trip have the same canonical form (stored fingerprints rely on this).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
