import { createHash } from "node:crypto";
import { invalidParams } from "../domain/errors.js";

/** A position in the console's task order (newest update first, then task id descending). */
export interface ConsoleListPosition {
  updatedAt: string;
  taskId: string;
}

const VERSION = 1;
const MAX_CURSOR = 1024;

/** A short digest of the filters a cursor was issued for: the same cursor under other filters is refused. */
export function filterDigest(filter: Record<string, unknown>): string {
  const canonical = JSON.stringify(
    Object.keys(filter)
      .sort()
      .map((k) => [k, filter[k]]),
  );
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 16);
}

/** Opaque to the page: base64url of a small JSON document (version, position, filter digest). */
export function encodeCursor(position: ConsoleListPosition, digest: string): string {
  return Buffer.from(JSON.stringify({ v: VERSION, u: position.updatedAt, i: position.taskId, f: digest })).toString(
    "base64url",
  );
}

/**
 * The position a cursor names, checked: well-formed, this version, a canonical timestamp and a task id, and
 * issued for the same filters. A cursor names only a place in the caller's own (tenant-scoped) list, so a
 * forged one can skip tasks but never show one the caller may not see. Anything else is invalid-params (400).
 */
export function decodeCursor(cursor: string, digest: string): ConsoleListPosition {
  const bad = (why: string) =>
    invalidParams(`cursor is not valid: ${why}; start again without a cursor`, { path: "cursor" });
  if (cursor.length > MAX_CURSOR || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad("not a cursor this console issued");
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw bad("not a cursor this console issued");
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw bad("not a cursor this console issued");
  const { v, u, i, f, ...rest } = doc as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || v !== VERSION) throw bad("unknown cursor version");
  if (typeof u !== "string" || Number.isNaN(Date.parse(u)) || new Date(u).toISOString() !== u)
    throw bad("bad position");
  if (typeof i !== "string" || i.length === 0 || i.length > 200) throw bad("bad position");
  if (f !== digest) throw bad("it was issued for other filters");
  return { updatedAt: u, taskId: i };
}
