/**
 * JSON with object keys sorted at every level and undefined members dropped, so equal values hash equally
 * whatever their key order. `undefined` inside an array reads as `null`, exactly as JSON.stringify writes
 * it, so a value and its JSON round trip have the same canonical form (stored fingerprints rely on this).
 * The walk keeps its own stack (no recursion), so a deeply nested value cannot overflow the call stack.
 */
export function canonicalJson(value: unknown): string {
  try {
    return shallowCanonicalJson(value, 0);
  } catch (err) {
    if (err !== TOO_DEEP) throw err;
    return deepCanonicalJson(value);
  }
}

/** Nesting the recursive writer takes; deeper values are written by the stack walk. */
const MAX_RECURSION = 200;
const TOO_DEEP = new Error("nested too deeply for the recursive writer");

/**
 * The same text as the stack walk, written recursively into one string: no work items nor entry arrays per
 * value (every message's idempotency fingerprint is written on the request path).
 */
function shallowCanonicalJson(value: unknown, depth: number): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (depth >= MAX_RECURSION) throw TOO_DEEP;
  if (Array.isArray(value)) {
    let out = "[";
    // `in` skips holes as forEach does in the stack walk.
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) continue;
      const item: unknown = value[i];
      out += (i > 0 ? "," : "") + shallowCanonicalJson(item === undefined ? null : item, depth + 1);
    }
    return out + "]";
  }
  const keys = Object.keys(value).sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined) continue;
    out += (first ? "" : ",") + JSON.stringify(key) + ":" + shallowCanonicalJson(item, depth + 1);
    first = false;
  }
  return out + "}";
}

function deepCanonicalJson(value: unknown): string {
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
    value.forEach((v: unknown, i) => items.push(...(i > 0 ? [{ text: "," }] : []), { value: v === undefined ? null : v }));
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
