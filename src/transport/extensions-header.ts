import type { HttpRequest } from "./http-io.js";

/** v0.3 spelling, then the v1.0 one; a request's activated extensions are echoed under the name it used. */
const EXTENSIONS_HEADERS = ["x-a2a-extensions", "a2a-extensions"] as const;

const NONE: Readonly<Record<string, string>> = Object.freeze({});

/** The requested extension URIs this agent supports, as response headers that echo them back (read-only). */
export function activatedExtensions(req: HttpRequest, supported: readonly string[]): Readonly<Record<string, string>> {
  // Most calls activate nothing: no object, split or filter for them.
  if (req.headers[EXTENSIONS_HEADERS[0]] === undefined && req.headers[EXTENSIONS_HEADERS[1]] === undefined) return NONE;
  const echoed: Record<string, string> = {};
  for (const header of EXTENSIONS_HEADERS) {
    const requested = String(req.headers[header] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const active = requested.filter((uri) => supported.includes(uri));
    if (active.length > 0) echoed[header] = active.join(", ");
  }
  return echoed;
}
