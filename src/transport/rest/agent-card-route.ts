import type { AgentCard } from "../../a2a/agent-card.js";
import { a2aVersionOf, PREFERRED_A2A_VERSION, type A2AVersion } from "../../a2a/protocol-version.js";
import { writeV10 } from "../../a2a/v10/v10-json.js";
import { encodeAgentCard } from "../../a2a/v10/v10-proto-codec.js";
import { AgentCardSchema } from "../../gen/lf/a2a/v1/a2a_pb.js";
import { restErrorV10 } from "../a2a-v10-errors.js";
import { sendJson, type HttpRequest, type HttpResponse } from "../http-io.js";

/**
 * `GET /.well-known/agent-card.json` for both eras (wire facts §5.7, as a2a-js serves it): without
 * `A2A-Version` (or with 0.3) the v0.3 card with the v1.0 `supportedInterfaces` embedded, which every
 * 0.3 client reads as before and a 1.0 client can pick an interface from; with `A2A-Version: 1.0` the pure
 * v1.0 card (ProtoJSON of `lf.a2a.v1.AgentCard`). Both list each binding once per version. `Vary:
 * A2A-Version` keeps caches apart; an unsupported version answers 400 VersionNotSupported.
 */
export function serveAgentCard(req: HttpRequest, res: HttpResponse, card: AgentCard): void {
  const vary = { vary: "A2A-Version" };
  let version: A2AVersion;
  try {
    version = a2aVersionOf(req);
  } catch (err) {
    const { status, body } = restErrorV10(err);
    sendJson(res, status, body, vary);
    return;
  }
  sendJson(res, 200, version === "1.0" ? writeV10(AgentCardSchema, encodeAgentCard(card)) : card, vary);
}

/** Discovery's `a2a` version fields, read off the card so they always equal the versions its interfaces declare. */
export function a2aVersionFields(card: AgentCard): { protocolVersions: string[]; preferredVersion: string; profiles: string[] } {
  const protocolVersions = [...new Set(card.supportedInterfaces.map((i) => i.protocolVersion))].sort();
  const preferredVersion = protocolVersions.includes(PREFERRED_A2A_VERSION) ? PREFERRED_A2A_VERSION : protocolVersions.at(-1)!;
  // Newest first; 0.3 is served for the legacy window (OpenWOP RFC 0152).
  const profiles = [...protocolVersions].reverse().map((v) => (v === "0.3" ? "a2a-0.3-legacy" : `a2a-${v}`));
  return { protocolVersions, preferredVersion, profiles };
}
