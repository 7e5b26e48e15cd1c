/**
 * The body of a peer's push to our callback, any version: A2A 1.0 POSTs a StreamResponse in ProtoJSON
 * (`{"statusUpdate": …}`, `{"task": …}`, `{"artifactUpdate": …}`; `application/a2a+json`), 0.3 a bare Task or
 * `status-update` event (`application/json`; the SDKs send the Task). The first version (newest first) whose
 * shape the body has reads it (its module's client half). Untrusted input, reduced like a stream event.
 */
import { invalidAnswer, parsePeerJson } from "./peer-json.js";
import type { PeerVersions } from "./peer-version.js";
import type { PeerStreamEvent } from "./peer-types.js";

/** The pushed event; undefined for a push that carries no task state (a message). Throws a PeerCallError on garbage. */
export function decodePeerPush(body: string, versions: PeerVersions): PeerStreamEvent | undefined {
  const json = parsePeerJson(body, "push body");
  const version = versions.find((v) => v.claimsPush(json));
  if (!version) throw invalidAnswer("push body (in no A2A version's shape)");
  return version.readPush(json);
}
