import { A2A_03_LEGACY_WINDOW_ENDS, bareCardShape, type AgentCardSettings } from "../../a2a/agent-card-settings.js";
import type { AgentCard } from "../../a2a/agent-card.js";
import { signingKeysMember, type SigningKeyListing } from "../../domain/evidence-bundle.js";
import { A2A_VERSION_QUERY } from "../../domain/a2a-version.js";
import type { TaskService } from "../../a2a/task-service.js";
import type { HttpRouter } from "../http-router.js";
import { sendJson } from "../http-io.js";
import { sendCacheableJson } from "../cacheable-json.js";
import { a2aVersionFields, BARE_CARD_QUERY, serveAgentCard, type SignedCards } from "./agent-card-route.js";
import type { AuthLane } from "../../auth/auth-lanes.js";
import type { AuthProfiles } from "../../auth/auth-profiles.js";
import { advertisedVersions, negotiatedMajor, type OpenwopVersions } from "../openwop-version.js";
import { discoveryV2Document } from "./discovery-v2.js";

export interface DiscoveryOptions {
  service: TaskService;
  publicUrl: string;
  durableTasks: boolean;
  version: string;
  transports: string[];
  /** Conformance fixture workflow ids this host has loaded (RFC 0003). */
  fixtures?: string[];
  /** Envelope types the host supports; clarification.request claims the openwop-interrupts profile. */
  supportedEnvelopes?: string[];
  /** The task machine's JSON definition for the visualizer (the composition root passes the machine's export). */
  taskMachine: () => Record<string, unknown>;
  /** What the bare card path serves, and how long caches keep the card and the discovery document. */
  cardSettings: AgentCardSettings;
  /** The 1.0 card with its `signatures` (A2A AgentCardSignature), made at start with the host's signing key. */
  signedCards?: SignedCards;
  /**
   * OpenWOP RFC 0158's recovery bound and attempt bound, derived from the lease and recovery settings (the
   * composition root builds it). Served as `recoveryEvidence`: the RFC puts these in the host's evidence
   * bundle and mints no capability field, so this is a host field in that row's shape, and claims no rung.
   */
  recoveryEvidence?: Record<string, unknown>;
  /** The OpenWOP majors served and the v2 auth lanes; the request header picks the representation. */
  openwop?: { versions: OpenwopVersions; lanes: AuthLane[] };
  /** The v1 auth profiles claimed (auth/auth-profiles.ts): `profiles[]` and the `oidc`, `oauth2`, `mtls` blocks. */
  authProfiles?: AuthProfiles;
  /** RFC 9728 protected-resource metadata (auth/protected-resource.ts), when OIDC issuers are configured. */
  protectedResource?: { path: string; document: Record<string, unknown> };
  /** The public keys this host signs evidence bundles with (RFC 0168 §E.2), served as `signingKeys[]`. */
  signingKeys?: readonly SigningKeyListing[];
  clock?: () => Date;
}

/** The conformance fixtures this host ships (loaded with BUILTIN_WORKFLOWS=conformance, or from WORKFLOWS_DIR); only loaded ones are advertised. */
export const CONFORMANCE_FIXTURES = [
  "conformance-noop",
  "conformance-approval",
  "conformance-cancellable",
  "conformance-delay",
  "conformance-idempotent",
  "conformance-a2a-task-roundtrip",
] as const;

export const AGENT_CARD_PATH = "/.well-known/agent-card.json";

/** The OpenWOP discovery document: required fields plus the `a2a` family at the document root (RFC 0073). */
export function discoveryDocument(options: DiscoveryOptions): Record<string, unknown> {
  const card = options.service.agentCard;
  return {
    protocolVersion: "1.0",
    // Both majors, additive in v1 (versioning.md §1.1): through the overlap the preferred one is 1.0.
    ...(options.openwop ? advertisedVersions(options.openwop.versions) : {}),
    // The software (name, version); with an identity configured (AGENT_*), also the agent it serves, as on its card.
    implementation: { name: "openwop-a2a-host", version: options.version, ...agentOf(card, options.cardSettings) },
    supportedEnvelopes: options.supportedEnvelopes ?? [],
    schemaVersions: { a2aTaskState: 1, workflow: 1 },
    limits: { clarificationRounds: 10, schemaRounds: 0, envelopesPerTurn: 0 },
    supportedTransports: options.transports,
    ...(options.fixtures ? { fixtures: options.fixtures } : {}),
    eventLogSchemaVersion: 2,
    ...(options.recoveryEvidence ? { recoveryEvidence: options.recoveryEvidence } : {}),
    ...signingKeysMember(options.signingKeys ?? []),
    // How callers authenticate: the card's schemes and requirements (the configured authenticators' own words),
    // and the v1 auth profiles those ways in meet, with their blocks (spec/v1/auth-profiles.md).
    auth: {
      required: (card.security ?? []).length > 0,
      schemes: card.securitySchemes ?? {},
      security: card.security ?? [],
      ...(options.authProfiles && options.authProfiles.profiles.length > 0 ? options.authProfiles : {}),
    },
    a2a: {
      supported: true,
      agentCardUrl: v1AgentCardUrl(options, a2aVersionFields(card)),
      streaming: card.capabilities.streaming,
      pushNotifications: card.capabilities.pushNotifications,
      durableTasks: options.durableTasks,
      // ["0.3", "1.0"], "1.0", ["a2a-1.0", "a2a-0.3-legacy"]: the versions the card's supportedInterfaces declare.
      ...a2aVersionFields(card),
    },
  };
}

/**
 * The v1 document's card URL. While it advertises 0.3, a reader naming no version must get the pure 0.3 card (RFC
 * 0152 §B's receiver rule, decided for discovery on 2026-08-16: the scenario a2a-card-runtime-consistency at
 * openwop/openwop b675e604 fetches it header-less and wants the 0.3 `url`, and sends `A2A-Version: 1.0` for the
 * 1.0 card): the bare path when AGENT_CARD_BARE=0.3 serves that already, else the same path with `?bare=0.3`,
 * whatever AGENT_CARD_BARE does to the bare path. Without 0.3, the preferred version's card by name.
 */
function v1AgentCardUrl(
  options: DiscoveryOptions,
  { protocolVersions, preferredVersion }: { protocolVersions: string[]; preferredVersion: string },
): string {
  if (!protocolVersions.includes("0.3"))
    return `${options.publicUrl}${AGENT_CARD_PATH}?${A2A_VERSION_QUERY}=${preferredVersion}`;
  return options.cardSettings.bareCard === "0.3"
    ? `${options.publicUrl}${AGENT_CARD_PATH}`
    : `${options.publicUrl}${AGENT_CARD_PATH}?${BARE_CARD_QUERY}=0.3`;
}

/** `implementation.agent`: the card's identity, only when one is configured (the default document stays as it was). */
function agentOf(card: AgentCard, settings: AgentCardSettings): { agent?: Record<string, unknown> } {
  if (Object.keys(settings.identity).length === 0) return {};
  return {
    agent: {
      name: card.name,
      description: card.description,
      version: card.version,
      ...(card.provider ? { provider: card.provider } : {}),
      ...(card.documentationUrl ? { documentationUrl: card.documentationUrl } : {}),
      ...(card.iconUrl ? { iconUrl: card.iconUrl } : {}),
    },
  };
}

export function addDiscoveryRoutes(router: HttpRouter, options: DiscoveryOptions): void {
  const clock = options.clock ?? (() => new Date());
  const { bareCard, cacheMaxAgeSeconds } = options.cardSettings;
  // The card and the discovery document are built once, at start; the bare card changes shape once more
  // when the 0.3 legacy window ends (under `auto`).
  const startedAt = clock();
  const lastModified = (): Date => {
    const windowEnd = new Date(A2A_03_LEGACY_WINDOW_ENDS);
    return bareCard === "auto" && startedAt < windowEnd && clock() >= windowEnd ? windowEnd : startedAt;
  };
  router.add(["GET", "HEAD"], AGENT_CARD_PATH, async (req, res) =>
    serveAgentCard(
      req,
      res,
      options.service.agentCard,
      bareCardShape(bareCard, clock()),
      { maxAgeSeconds: cacheMaxAgeSeconds, lastModified: lastModified() },
      options.signedCards,
    ),
  );
  // One resource, two representations (capabilities.md §1): OpenWOP-Version selects; caches key on it.
  // The v2 root's a2a.refreshedAt is today's date (interop.md wants it at most 90 days old, however long the host
  // runs): the document is built per request, and changes (with its ETag and Last-Modified) once a day.
  router.add(["GET", "HEAD"], "/.well-known/openwop", async (req, res) => {
    const { openwop } = options;
    const major = openwop ? negotiatedMajor(req, "/.well-known/openwop", openwop.versions) : 1;
    const now = clock();
    const today = new Date(now.toISOString().slice(0, 10));
    const v2 = major === 2 && openwop;
    sendCacheableJson(req, res, v2 ? discoveryV2Of(options, openwop, now) : discoveryDocument(options), {
      maxAgeSeconds: cacheMaxAgeSeconds,
      lastModified: v2 && today > startedAt ? today : startedAt,
      headers: { vary: "OpenWOP-Version" },
    });
  });
  const { protectedResource } = options;
  if (protectedResource)
    router.add(["GET", "HEAD"], protectedResource.path, async (req, res) =>
      sendCacheableJson(req, res, protectedResource.document, {
        maxAgeSeconds: cacheMaxAgeSeconds,
        lastModified: startedAt,
      }),
    );
  router.add("GET", "/v1/a2a/tasks/{taskId}", async (_req, res, params, ctx) => {
    sendJson(res, 200, await options.service.getA2ATaskState(params["taskId"]!, ctx));
  });
  router.add("GET", "/v1/a2a/task-machine.json", async (_req, res) => sendJson(res, 200, options.taskMachine()));
  router.add("GET", "/healthz", async (_req, res) => sendJson(res, 200, { status: "ok" }));
}

function discoveryV2Of(
  options: DiscoveryOptions,
  openwop: NonNullable<DiscoveryOptions["openwop"]>,
  builtAt: Date,
): Record<string, unknown> {
  const card = options.service.agentCard;
  return discoveryV2Document({
    versions: openwop.versions,
    version: options.version,
    card,
    durableTasks: options.durableTasks,
    a2aVersions: a2aVersionFields(card).protocolVersions,
    agentCardUrl: (version) => `${options.publicUrl}${AGENT_CARD_PATH}?${A2A_VERSION_QUERY}=${version}`,
    lanes: openwop.lanes,
    ...(options.fixtures ? { fixtures: options.fixtures } : {}),
    ...(options.signingKeys ? { signingKeys: options.signingKeys } : {}),
    builtAt,
  });
}
