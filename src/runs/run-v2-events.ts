import type { Artifact } from "../domain/a2a-types.js";
import { boundIdOf } from "../domain/bound-id.js";
import type { RunEvent } from "../domain/task-record.js";
import { legacySubjectOf } from "./run-v2-view.js";

/**
 * OpenWOP v2 run events, projected on read from the stored log (nothing stored changes). One rule per event type
 * this host emits says how its stored (OpenWOP 1) payload becomes the v2 one:
 * openwop/openwop schemas/v2/run-event-payloads.schema.json at 11ad7804 (every definition closed; the root
 * `_typeIndex` names it) and, for interrupt.requested, schemas/v2/suspend-request.schema.json at ccb32779.
 * events.md (0f963178): "a projection MUST NOT silently drop a property: carry or fail", so a
 * stored key the definition lacks is carried under the extension hatch as `vendor.openwop-a2a-host.<key>`, unless
 * the rule names it restated (the same fact is on the envelope or beside it) or the definition has no hatch.
 */

/** What the view knows about the run beyond the event: the caller's tenant, the run's owner, its node kinds. */
export interface V2EventView {
  tenant: string;
  owner: unknown;
  kindOf(nodeId: string): string | undefined;
}

type Payload = Record<string, unknown>;
type StoredEvent = Pick<RunEvent, "runId" | "nodeId" | "payload" | "a2a">;

interface PayloadRule {
  /** Keys the v2 definition holds under the same name, copied when set. */
  keep: readonly string[];
  /** Keys `derive` turns into v2 keys (renamed, re-based, bound, reshaped). */
  mapped?: readonly string[];
  /** Keys restating what the envelope (or another event of the same transition) says: left out. */
  restated?: readonly string[];
  derive?: (stored: Payload, event: StoredEvent, view: V2EventView) => Payload;
  /** The definition is open (runResumed): every stored key stays. */
  open?: true;
  /** The definition has no extension hatch (suspend-request): keys outside the rule cannot be carried. */
  noHatch?: true;
}

/** The extension key a stored key travels under when the v2 definition has no seat for it (RFC 0185 hatch). */
const HOST_KEY = "vendor.openwop-a2a-host.";
/** The type this host gives its artifacts: A2A artifacts, host-local, checked against no registered schema. */
const ARTIFACT_TYPE = "vendor.openwop-a2a-host.artifact";
/** A node's typeId: its kind under the host's vendor namespace (ids.schema.json typeId). */
const TYPE_ID = /^[a-z][a-z0-9_-]*(\.[a-z][a-zA-Z0-9_-]*)+$/;

const RULES: Readonly<Record<string, PayloadRule>> = {
  "run.started": { keep: ["workflowId"], mapped: ["owner"], derive: (_, __, view) => ({ owner: view.owner }) },
  "run.completed": {
    // This host's runs produce artifacts (artifact.created), not an outputs object: `outputs` is empty.
    keep: ["durationMs"],
    derive: () => ({ outputs: {} }),
  },
  "run.failed": { keep: ["failedNodeId", "durationMs"], mapped: ["error"], derive: (p) => ({ error: errorV2(p) }) },
  "run.cancelled": { keep: ["reason", "cancelledBy", "durationMs"] },
  "run.paused": { keep: ["reason", "drainPolicy"] },
  "run.resumed": { keep: [], open: true },
  "node.started": {
    // The stored attempt counts from 1; v2's is zero-based.
    keep: ["nodeId"],
    mapped: ["attempt"],
    derive: (p, _, view) => ({
      typeId: typeIdOf(view.kindOf(String(p["nodeId"]))),
      ...(typeof p["attempt"] === "number" && p["attempt"] >= 1 ? { attempt: p["attempt"] - 1 } : {}),
    }),
  },
  "node.completed": { keep: ["nodeId", "outputs", "durationMs"] },
  "node.failed": { keep: ["nodeId", "attempts"], mapped: ["error"], derive: (p) => ({ error: errorV2(p) }) },
  "node.suspended": { keep: ["nodeId", "kind", "key"], mapped: ["interruptId"], derive: bindInterruptId },
  "node.resumed": { keep: ["nodeId", "resumeValue"], mapped: ["interruptId"], derive: bindInterruptId },
  "interrupt.requested": {
    // runId and nodeId are the envelope's, interruptId is node.suspended's (the same transition), requestedAt
    // the event's timestamp.
    keep: ["kind", "key", "timeoutMs"],
    mapped: ["data"],
    restated: ["runId", "nodeId", "interruptId", "requestedAt"],
    derive: (p) => ({ data: interruptDataV2(p) }),
    noHatch: true,
  },
  "interrupt.resolved": {
    keep: ["nodeId", "kind", "resumeValue"],
    mapped: ["interruptId", "resolvedBy"],
    restated: ["runId", "resolvedAt"],
    derive: (p, e, view) => ({
      ...bindInterruptId(p, e, view),
      ...(typeof p["resolvedBy"] === "string" ? { resolvedBy: legacySubjectOf(view.tenant, p["resolvedBy"]) } : {}),
    }),
  },
  "artifact.created": {
    keep: ["artifactId", "nodeId"],
    derive: () => ({ artifactType: ARTIFACT_TYPE, registered: false }),
  },
  "output.chunk": {
    keep: ["nodeId"],
    mapped: ["lastChunk"],
    derive: (p, e, view) => ({
      runId: boundIdOf(view.tenant, e.runId),
      chunk: chunkTextOf(e.a2a?.artifact),
      isLast: p["lastChunk"] === true,
    }),
  },
};

/**
 * The v2 RunEventDoc of a stored event (events.md 0f963178: the closed envelope), or undefined when its type is
 * not served. The served types are this host's rows of spec/v2/event-codemap.json (96c270a4), all under their own
 * names. The host's own types (run.created, run.cancelling, node.progress, node.interrupted, interrupt.exchange,
 * timer.scheduled) have no row and no registered vendor org, so the v2 feed (`updates` mode) leaves them out
 * rather than emit an unregistered type; their sequences are skipped. So do the v1 interrupt payloads written
 * beside interrupt.requested / interrupt.resolved (approval.*, clarification.*): v2 removed their definitions (row
 * legacy-interrupt-payloads), and the interrupt.* pair carries the same facts.
 */
export function runEventV2(
  event: Pick<RunEvent, "eventId" | "runId" | "nodeId" | "type" | "payload" | "timestamp" | "sequence" | "a2a">,
  view: V2EventView,
): Record<string, unknown> | undefined {
  const rule = RULES[event.type];
  if (!rule) return undefined;
  return {
    // The stored id is `<runId>:<sequence>`; the eventId grammar has no ":".
    eventId: event.eventId.replace(/:/g, "."),
    runId: boundIdOf(view.tenant, event.runId),
    ...(event.nodeId !== undefined && event.nodeId !== null ? { nodeId: event.nodeId } : {}),
    type: event.type,
    payload: payloadOf(rule, event, view),
    timestamp: event.timestamp,
    sequence: event.sequence,
    schemaVersion: 1,
  };
}

function payloadOf(rule: PayloadRule, event: StoredEvent, view: V2EventView): Payload {
  const stored = event.payload;
  if (rule.open) return present(stored);
  const out: Payload = {};
  for (const key of rule.keep) if (isSet(stored[key])) out[key] = stored[key];
  Object.assign(out, rule.derive?.(stored, event, view));
  if (rule.noHatch) return out;
  const placed = new Set([...rule.keep, ...(rule.mapped ?? []), ...(rule.restated ?? [])]);
  for (const [key, value] of Object.entries(stored))
    if (!placed.has(key) && isSet(value)) out[`${HOST_KEY}${key}`] = value;
  return out;
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** A payload without its unset keys (a stored `undefined` may come back from the store as null). */
function present(payload: Payload): Payload {
  return Object.fromEntries(Object.entries(payload).filter(([, v]) => isSet(v)));
}

function bindInterruptId(p: Payload, _: StoredEvent, view: V2EventView): Payload {
  const id = p["interruptId"];
  return typeof id === "string" ? { interruptId: id.includes("/") ? id : boundIdOf(view.tenant, id) } : {};
}

function typeIdOf(kind: string | undefined): string {
  const typeId = `vendor.openwop-a2a-host.${kind ?? "node"}`;
  return TYPE_ID.test(typeId) && typeId.length <= 256 ? typeId : "vendor.openwop-a2a-host.node";
}

/** The closed v2 error object: code, message, details, retryable; anything else under the hatch. */
function errorV2(p: Payload): Payload {
  const error = (p["error"] ?? {}) as Payload;
  const out: Payload = {
    code: String(error["code"] || "internal_error"),
    message: String(error["message"] || "the run failed"),
  };
  for (const [key, value] of Object.entries(error)) {
    if (key === "code" || key === "message" || !isSet(value)) continue;
    const seated =
      (key === "details" && typeof value === "object") || (key === "retryable" && typeof value === "boolean");
    out[seated ? key : `${HOST_KEY}${key}`] = value;
  }
  return out;
}

/**
 * suspend-request's per-kind data. Approval: the host reviews A2A artifacts, so `artifactId` is the first
 * reviewed one (the gate's node id when none ran) and `artifactType` the host's; ApprovalData has no seat for the
 * others. Clarification: the questions, as stored.
 */
function interruptDataV2(p: Payload): Payload {
  const data = (p["data"] ?? {}) as Payload;
  if (p["kind"] !== "approval") return data;
  const ids = data["artifactIds"];
  return {
    artifactId: (Array.isArray(ids) && typeof ids[0] === "string" && ids[0]) || String(p["nodeId"]),
    artifactType: ARTIFACT_TYPE,
    title: data["title"],
    ...(isSet(data["description"]) ? { description: data["description"] } : {}),
    actions: data["actions"],
  };
}

/** The text a streamed chunk carries: its text parts, and its data parts as JSON (a file part has no text). */
function chunkTextOf(artifact: Artifact | undefined): string {
  return (artifact?.parts ?? [])
    .map((part) => (part.kind === "text" ? part.text : part.kind === "data" ? JSON.stringify(part.data) : ""))
    .join("");
}
