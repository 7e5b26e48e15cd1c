/**
 * `${NAME}` references in workflow definitions (an `a2a.invoke` node's agentCardUrl, an `http` node's url and
 * header values). A leaf module: the loader, the peer runner and node kinds read it without importing each other.
 */

/** One `${NAME}` reference (global: use with matchAll / replace). */
export const VARIABLE_REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The `${NAME}` references left in a string (after loading: the ones that were not configured). */
export function unexpandedVariables(text: string): string[] {
  return [...text.matchAll(VARIABLE_REFERENCE)].map((m) => m[1]!);
}
