/**
 * "Did you mean …?" for names a person typed: a handler, a peer, an environment variable. Small edit distance
 * only, so a suggestion is a likely typo and not just another name.
 */

/** Edit distance with adjacent transpositions (optimal string alignment): "ecoh" is one edit from "echo". */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current[j] = best;
    }
    before = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/** Edits allowed for a name of this length: 1 for short names (4 characters or fewer), else 2. */
function allowedEdits(name: string): number {
  return name.length <= 4 ? 1 : 2;
}

/** The candidate nearest to `name` (ignoring case) within a few edits, or undefined; `name` itself is never suggested. */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  const wanted = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = allowedEdits(name) + 1;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` (did you mean "x"?)`, or "" when nothing is close. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const close = closestName(name, candidates);
  return close === undefined ? "" : ` (did you mean "${close}"?)`;
}
