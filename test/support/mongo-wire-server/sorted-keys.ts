// The distinct values of one index level in key order (compareValues, then canonical key to tell
// apart values that compare equal, such as null and an empty array's key), so a range is found by
// binary search and read in order: O(log n + k) instead of a walk over every value. A list of
// bounded chunks (a flat B-tree): insertion and removal move at most one chunk.

import { compareValues } from "./bson-compare.js";

export interface SortedEntry {
  readonly value: unknown;
  readonly canonical: string;
}

const MAX_CHUNK = 512;

function compareEntries(a: SortedEntry, b: SortedEntry): number {
  return compareValues(a.value, b.value) || (a.canonical < b.canonical ? -1 : a.canonical > b.canonical ? 1 : 0);
}

export class SortedKeys<T extends SortedEntry> {
  private chunks: T[][] = [];

  get size(): number {
    let n = 0;
    for (const chunk of this.chunks) n += chunk.length;
    return n;
  }

  insert(entry: T): void {
    if (this.chunks.length === 0) {
      this.chunks.push([entry]);
      return;
    }
    const c = Math.min(
      this.chunkFor((e) => compareEntries(e, entry) < 0),
      this.chunks.length - 1,
    );
    const chunk = this.chunks[c]!;
    chunk.splice(
      firstIndex(chunk, (e) => compareEntries(e, entry) < 0),
      0,
      entry,
    );
    if (chunk.length > MAX_CHUNK)
      this.chunks.splice(c, 1, chunk.slice(0, chunk.length >> 1), chunk.slice(chunk.length >> 1));
  }

  remove(entry: SortedEntry): void {
    const c = this.chunkFor((e) => compareEntries(e, entry) < 0);
    const chunk = this.chunks[c];
    if (!chunk) return;
    const i = firstIndex(chunk, (e) => compareEntries(e, entry) < 0);
    if (i < chunk.length && compareEntries(chunk[i]!, entry) === 0) chunk.splice(i, 1);
    if (chunk.length === 0) this.chunks.splice(c, 1);
  }

  /** The entries from the first one that is not `before` on, in order (stop iterating to end the range). */
  *from(before: (entry: T) => boolean): Generator<T> {
    const c = this.chunkFor(before);
    for (let k = c; k < this.chunks.length; k++) {
      const chunk = this.chunks[k]!;
      for (let i = k === c ? firstIndex(chunk, before) : 0; i < chunk.length; i++) yield chunk[i]!;
    }
  }

  /** The first chunk whose last entry is not `before` (chunks.length if none). */
  private chunkFor(before: (entry: T) => boolean): number {
    let lo = 0;
    let hi = this.chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const chunk = this.chunks[mid]!;
      if (before(chunk[chunk.length - 1]!)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** The first index in sorted `list` whose entry is not `before`. */
function firstIndex<T>(list: readonly T[], before: (entry: T) => boolean): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(list[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
