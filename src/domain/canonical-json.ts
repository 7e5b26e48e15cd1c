/**
 * JSON with object keys sorted at every level and undefined members dropped, so equal values hash equally
 * whatever their key order. `undefined` inside an array reads as `null`, exactly as JSON.stringify writes
 * it, so a value and its JSON round trip have the same canonical form (stored fingerprints rely on this).
 * The walk keeps its own stack (no recursion), so a deeply nested value cannot overflow the call stack.
 */
export function canonicalJson(value: unknown): string {
  let out = "";
  // Work items popped from the end: literal text to append, or a value to write.
  const work: Array<{ text: string } | { value: unknown }> = [{ value }];
  while (work.length > 0) {
    const item = work.pop()!;
    if ("text" in item) {
      out += item.text;
      continue;
    }
    const next = expand(item.value);
    if (typeof next === "string") out += next;
    else for (let i = next.length - 1; i >= 0; i--) work.push(next[i]!);
  }
  return out;
}

/** A scalar's JSON text, or the items of an array or object in writing order. */
function expand(value: unknown): string | Array<{ text: string } | { value: unknown }> {
  if (Array.isArray(value)) {
    const items: Array<{ text: string } | { value: unknown }> = [{ text: "[" }];
    value.forEach((v: unknown, i) =>
      items.push(...(i > 0 ? [{ text: "," }] : []), { value: v === undefined ? null : v }),
    );
    return [...items, { text: "]" }];
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const items: Array<{ text: string } | { value: unknown }> = [{ text: "{" }];
    entries.forEach(([k, v], i) => items.push({ text: `${i > 0 ? "," : ""}${JSON.stringify(k)}:` }, { value: v }));
    return [...items, { text: "}" }];
  }
  return JSON.stringify(value) ?? "null";
}
