import type { BareCardShape } from "../../a2a/agent-card-settings.js";
import type { AgentCard } from "../../a2a/agent-card.js";
import { PREFERRED_A2A_VERSION, requestedA2AVersion, type A2AVersion } from "../../domain/a2a-version.js";
import { noteRequest } from "../../observability/request-notes.js";
import { a2aVersionNoted } from "../a2a-version-note.js";
import { versionModule } from "../../a2a/versions.js";
import { sendCacheableJson, type Cacheability } from "../cacheable-json.js";
import type { HttpRequest, HttpResponse } from "../http-io.js";
import { sendA2ARestError } from "./a2a-rest-router.js";
import { DomainError } from "../../domain/errors.js";

/** `?bare=` on the card URL: what that URL serves a request naming no version (AGENT_CARD_BARE's values). */
export const BARE_CARD_QUERY = "bare";
const BARE_CHOICES: Record<string, BareCardShape> = { "0.3": "pure-0.3", hybrid: "hybrid", "1.0": "1.0" };

/**
 * `GET /.well-known/agent-card.json` for every era (wire facts §5.7, as a2a-js serves it): the card as the
 * requested version's clients read it (registry `card.document`): with `A2A-Version: 0.3` the v0.3 card with
 * the v1.0 `supportedInterfaces` embedded (the hybrid card); with `A2A-Version: 1.0` (header or query) the pure
 * v1.0 card; without it, whichever `bare` names (AGENT_CARD_BARE: the hybrid card, the pure 0.3 card or the
 * pure 1.0 card). `Vary: A2A-Version` keeps caches apart; an unsupported version answers 400
 * VersionNotSupported in the preferred version's HTTP+JSON shape. `signed` holds a version's card as signed at
 * start (the 1.0 card with `signatures`), served as it is.
 */
export function serveAgentCard(
  req: HttpRequest,
  res: HttpResponse,
  card: AgentCard,
  bare: BareCardShape,
  cache: Omit<Cacheability, "headers">,
  signed: SignedCards = {},
): void {
  const vary = { vary: "A2A-Version" };
  let version: A2AVersion;
  try {
    // Without a version asked for, AGENT_CARD_BARE decides; an asked version must be one the card's interfaces declare (drafts included when switched on).
    if (requestedA2AVersion(req.headers, req.url) === undefined) {
      const shape = bareOf(req.url) ?? bare;
      version = shape === "hybrid" || shape === "pure-0.3" ? "0.3" : "1.0";
      noteRequest({ a2aNegotiation: { negotiated: version } });
      if (shape === "pure-0.3") return sendCacheableJson(req, res, pure03Card(card), { ...cache, headers: vary });
    } else {
      version = a2aVersionNoted(req, cardVersions(card));
    }
  } catch (err) {
    sendA2ARestError(res, PREFERRED_A2A_VERSION, err, { ...vary, "content-type": "application/json" });
    return;
  }
  sendCacheableJson(req, res, signed[version] ?? versionModule(version).card.document(card), {
    ...cache,
    headers: vary,
  });
}

/** The URL's `?bare=` choice, if any; an unknown one is refused (400), as an unknown `A2A-Version` is. */
function bareOf(url: string | undefined): BareCardShape | undefined {
  const query = url?.indexOf("?") ?? -1;
  if (query < 0) return undefined;
  const asked = new URLSearchParams(url!.slice(query + 1)).get(BARE_CARD_QUERY);
  if (asked === null) return undefined;
  const shape = BARE_CHOICES[asked];
  if (shape) return shape;
  throw new DomainError(
    "invalid-params",
    `${BARE_CARD_QUERY}=${JSON.stringify(asked.slice(0, 40))} names no card: use 0.3, hybrid or 1.0`,
  );
}

/** The 0.3 card alone: the hybrid card without the 1.0 `supportedInterfaces` (OpenWOP RFC 0152 §B). */
function pure03Card(card: AgentCard): Omit<AgentCard, "supportedInterfaces"> {
  const { supportedInterfaces: _omitted, ...v03 } = card;
  return v03;
}

/** Card documents signed once at start, by version (the card does not change while the host runs). */
export type SignedCards = Partial<Record<A2AVersion, Record<string, unknown>>>;

/** Discovery's `a2a` version fields, read off the card so they always equal the versions its interfaces declare. */
export function a2aVersionFields(card: AgentCard): {
  protocolVersions: string[];
  preferredVersion: string;
  profiles: string[];
} {
  const protocolVersions = [...new Set(card.supportedInterfaces.map((i) => i.protocolVersion))].sort();
  const preferredVersion = protocolVersions.includes(PREFERRED_A2A_VERSION)
    ? PREFERRED_A2A_VERSION
    : protocolVersions.at(-1)!;
  // Newest first; 0.3 is served for the legacy window (OpenWOP RFC 0152).
  const profiles = [...protocolVersions].reverse().map((v) => versionModule(v).card.profile);
  return { protocolVersions, preferredVersion, profiles };
}

function cardVersions(card: AgentCard): A2AVersion[] {
  return [...new Set(card.supportedInterfaces.map((i) => i.protocolVersion))];
}
