/**
 * The body of a peer's push to our callback, either version: A2A 1.0 POSTs a StreamResponse in ProtoJSON
 * (`{"statusUpdate": …}`, `{"task": …}`, `{"artifactUpdate": …}`; `application/a2a+json`), 0.3 a bare Task or
 * `status-update` event (`application/json`; the SDKs send the Task). Untrusted input, reduced like a stream event.
 */
import * as v10pb from "../gen/lf/a2a/v1/a2a_pb.js";
import { parsePeerJson, parsePeerStreamEventV03 } from "./peer-codec-v03.js";
import { peerStreamEventFromV10, readProtoJson } from "./peer-codec-v10.js";
import type { PeerStreamEvent } from "./peer-types.js";

const V10_MEMBERS = ["statusUpdate", "task", "artifactUpdate", "message", "status_update", "artifact_update"];

/** The pushed event; undefined for a push that carries no task state (a message). Throws a PeerCallError on garbage. */
export function decodePeerPush(body: string): PeerStreamEvent | undefined {
  const json = parsePeerJson(body, "push body");
  const isV10 = typeof json === "object" && json !== null && !Array.isArray(json) && !("kind" in json) && V10_MEMBERS.some((m) => m in json);
  if (isV10) return peerStreamEventFromV10(readProtoJson(v10pb.StreamResponseSchema, json, "push body"));
  return parsePeerStreamEventV03(json);
}
