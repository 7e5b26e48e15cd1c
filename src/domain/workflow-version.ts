import { createHash } from "node:crypto";
import { canonicalJson } from "./canonical-json.js";

/**
 * A definition's version: its `version` field when set, else the first 12 hex digits of the SHA-256 of its
 * canonical form, so the same content always has the same version whatever its key order.
 */
export function workflowVersionOf(definition: { id: string; version?: string }): string {
  if (typeof definition.version === "string" && definition.version !== "") return definition.version;
  return createHash("sha256").update(canonicalJson(definition)).digest("hex").slice(0, 12);
}

/** The store key of one version of one workflow. */
export function workflowVersionKey(workflowId: string, version: string): string {
  return `${workflowId}@${version}`;
}
