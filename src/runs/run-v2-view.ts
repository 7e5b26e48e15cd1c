import { boundIdOf, projectBoundId } from "../domain/bound-id.js";
import type { TaskRecord } from "../domain/task-record.js";
import type { RunSnapshot } from "./run-snapshot.js";
import type { StartRunResponse } from "./run-service.js";

/**
 * The OpenWOP v2 shapes of a run, projected from what this host stores (nothing stored changes): runs.md
 * (openwop/openwop a98b0205) for the snapshot, identity.md §5 for the ids (the events: run-v2-events.ts). Pure.
 */

/** The era key (versioning.md §2.2, persistence.md): 3 on runs created by this host since v2; absent means v1's 2. */
export function eventLogSchemaVersionOf(record: Pick<TaskRecord, "eventLogSchemaVersion">): number {
  return record.eventLogSchemaVersion ?? 2;
}

/** The unversioned link of a run (its id projected into one path segment). */
export function runLinkOf(boundId: string): string {
  return `/runs/${projectBoundId(boundId)}`;
}

/** `201 {runId, status, eventsUrl, statusUrl}` of createRun, bound. */
export function createdRunV2(tenant: string, created: StartRunResponse): StartRunResponse {
  const runId = boundIdOf(tenant, created.runId);
  const link = runLinkOf(runId);
  return { runId, status: created.status, eventsUrl: `${link}/events`, statusUrl: link };
}

/** The Subject of `owner` (identity.md §1): this host records who created a run, not the issuer it came through. */
export interface V2Subject {
  issuer: string;
  subjectId: string;
  tenant: string;
  lane: "api-key" | "oidc" | "mtls";
  kind: "user";
}

const LANES: Record<string, V2Subject["lane"]> = { apikey: "api-key", oidc: "oidc", mtls: "mtls" };

/**
 * identity.md §1.2's legacy subject rule: runs here were never stamped with an issuer, so every run reads with
 * `issuer: "urn:openwop:legacy"`, its lane as the recorded credential kind says (else `api-key`) and `kind: user`.
 * Derived the same way on every read, so nothing is rewritten.
 */
export function legacySubjectOf(tenant: string, createdBy: string | undefined): V2Subject {
  const colon = createdBy?.indexOf(":") ?? -1;
  const lane = (colon > 0 && LANES[createdBy!.slice(0, colon)]) || "api-key";
  const subjectId = (createdBy ?? "unknown").replace(
    /[\s/%]/g,
    (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
  return { issuer: "urn:openwop:legacy", subjectId: subjectId.slice(0, 256), tenant, lane, kind: "user" };
}

/** The v2 RunSnapshot (closed: runs.md §Snapshot's fields only). */
export function runSnapshotV2(snapshot: RunSnapshot, record: TaskRecord): Record<string, unknown> {
  const tenant = snapshot.owner.tenant;
  return {
    runId: boundIdOf(tenant, snapshot.runId),
    workflowId: snapshot.workflowId,
    status: snapshot.status,
    owner: { tenant, subject: legacySubjectOf(tenant, snapshot.owner.principal) },
    eventLogSchemaVersion: eventLogSchemaVersionOf(record),
    ...(snapshot.currentNodeId ? { currentNodeId: snapshot.currentNodeId } : {}),
    ...(snapshot.error ? { error: snapshot.error } : {}),
    ...(snapshot.configurable ? { configurable: snapshot.configurable } : {}),
    ...(snapshot.tags ? { tags: snapshot.tags } : {}),
    ...(snapshot.metadata ? { metadata: snapshot.metadata } : {}),
  };
}

/** The payload keys naming tenant-bound kinds (identity.md §5: runs and interrupts are the ones this host mints). */
const BOUND_KEYS = ["runId", "parentRunId", "interruptId"] as const;

/** A payload (or body) with its run and interrupt ids bound: ids in v2 documents are bound, always. */
export function withBoundIds<T extends object>(body: T, tenant: string): T {
  const bound = { ...body } as Record<string, unknown>;
  for (const key of BOUND_KEYS) {
    const value = bound[key];
    if (typeof value === "string" && !value.includes("/")) bound[key] = boundIdOf(tenant, value);
  }
  return bound as T;
}
