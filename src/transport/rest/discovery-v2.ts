import { signingKeysMember, type SigningKeyListing } from "../../domain/evidence-bundle.js";
import type { AuthLane } from "../../auth/auth-lanes.js";
import type { AgentCard } from "../../a2a/agent-card.js";
import { advertisedVersions, type OpenwopVersions } from "../openwop-version.js";

/**
 * The closed OpenWOP v2 discovery root (`/.well-known/openwop` with `OpenWOP-Version: 2`; spec/v2/core/
 * capabilities.md at openwop/openwop b675e604, schema schemas/v2/capabilities.schema.json at 4ae34fdd): metadata
 * keys, then one capability record per family this host serves. No v1 key (supportedTransports, bare
 * `a2a.supported`, auth.profiles, a root profiles[], a grpc block) may appear. A new root key is one more entry in
 * `metadata` or `families` below, and must be a key of the v2 schema.
 */
export interface DiscoveryV2Options {
  versions: OpenwopVersions;
  version: string;
  card: AgentCard;
  durableTasks: boolean;
  /** The A2A versions the card's interfaces serve (0.3 stays served and is not advertised in v2). */
  a2aVersions: string[];
  /** The pure card of the v2 facet's preferredVersion, named by version so no card rule can change it. */
  agentCardUrl: (version: string) => string;
  /** The lanes the host enforces (auth/auth-lanes.ts); none (dev mode) omits the family. */
  lanes: AuthLane[];
  fixtures?: string[];
  /** The evidence bundles' signing keys (RFC 0158, conformance.md bundle v3), as in the v1 document. */
  signingKeys?: readonly SigningKeyListing[];
  /** When the document is built: the a2a facet's refreshedAt is its date. */
  builtAt: Date;
}

/** A capability record (capabilities.md §2): stable families carry no `until`. */
function record(witness: string, facets: Record<string, unknown>): Record<string, unknown> {
  return { status: "stable", since: "2.0", witness, ...facets };
}

export function discoveryV2Document(options: DiscoveryV2Options): Record<string, unknown> {
  const { protocolVersions, preferredVersion } = advertisedVersions(options.versions);
  const metadata = {
    // Kept as preferredVersion's twin for v1 readers through the overlap (versioning.md axis 1).
    protocolVersion: preferredVersion,
    protocolVersions,
    preferredVersion,
    implementation: { name: "openwop-a2a-host", version: options.version },
    eventLogSchemaVersion: 3,
    ...(options.versions.minClientVersion ? { minClientVersion: options.versions.minClientVersion } : {}),
    ...(options.fixtures ? { fixtures: options.fixtures } : {}),
    ...signingKeysMember(options.signingKeys ?? []),
  };
  const families = {
    a2a: record("seam-gated", a2aFacet(options)),
    ...(options.lanes.length > 0 ? { auth: record("seam-gated", { lanes: options.lanes }) } : {}),
  };
  return { ...metadata, ...families };
}

/** interop.md's a2a facet: the versions served and advertised (no 0.3), newest preferred, profiles a2a-<v>. */
function a2aFacet(options: DiscoveryV2Options): Record<string, unknown> {
  const versions = options.a2aVersions.filter((v) => v !== "0.3").sort(byVersion);
  const preferredVersion = versions.includes("1.0") ? "1.0" : versions.at(-1)!;
  const caps = options.card.capabilities;
  return {
    versions,
    preferredVersion,
    minimumVersion: versions[0],
    refreshedAt: options.builtAt.toISOString().slice(0, 10),
    profiles: versions.map((v) => `a2a-${v}`),
    agentCardUrl: options.agentCardUrl(preferredVersion),
    streaming: caps.streaming === true,
    pushNotifications: caps.pushNotifications === true,
    durableTasks: options.durableTasks,
  };
}

function byVersion(a: string, b: string): number {
  const [am, an] = a.split(".").map(Number);
  const [bm, bn] = b.split(".").map(Number);
  return am! - bm! || an! - bn!;
}
