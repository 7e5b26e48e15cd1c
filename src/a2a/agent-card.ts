import type { WorkflowCatalog } from "../engine/workflow-catalog.js";
import { A2A_VERSIONS, PREFERRED_A2A_VERSION, type A2AVersion } from "../domain/a2a-version.js";

export type TransportName = "JSONRPC" | "GRPC" | "HTTP+JSON";

export interface AgentInterface {
  url: string;
  transport: TransportName;
}

/** A v1.0 `AgentInterface`: one binding at one URL for one protocol version (JSON, no `tenant`: the API key decides). */
export interface VersionedInterface {
  url: string;
  protocolBinding: TransportName;
  protocolVersion: A2AVersion;
}

/**
 * The A2A v0.3 agent card (JSON form) plus the v1.0 `supportedInterfaces`, which lists every binding once per
 * protocol version (wire facts §5.7): served as is, this is the "superset" card both eras read. Codecs for
 * other shapes (the v0.3 proto, the pure v1.0 card) derive from it.
 */
export interface AgentCard {
  protocolVersion: string;
  name: string;
  description: string;
  url: string;
  preferredTransport: TransportName;
  additionalInterfaces: AgentInterface[];
  provider?: { organization: string; url: string };
  version: string;
  documentationUrl?: string;
  iconUrl?: string;
  capabilities: {
    streaming: boolean;
    pushNotifications: boolean;
    stateTransitionHistory: boolean;
    extensions?: Array<{ uri: string; description?: string; required?: boolean }>;
  };
  securitySchemes?: Record<string, Record<string, unknown>>;
  security?: Array<Record<string, string[]>>;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: Array<{
    id: string;
    name: string;
    description: string;
    tags: string[];
    examples?: string[];
    inputModes?: string[];
    outputModes?: string[];
  }>;
  supportsAuthenticatedExtendedCard: boolean;
  supportedInterfaces: VersionedInterface[];
}

export interface AgentCardOptions {
  name: string;
  description: string;
  version: string;
  /** The organization behind the agent (AGENT_PROVIDER_ORGANIZATION and AGENT_PROVIDER_URL). */
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  iconUrl?: string;
  /** The interfaces actually served, preferred first: the first one is the card's `url`. */
  interfaces: AgentInterface[];
  streaming: boolean;
  pushNotifications: boolean;
  /** The extensions the agent's tasks carry (capabilities.extensions). */
  extensions?: NonNullable<AgentCard["capabilities"]["extensions"]>;
  /** The ways in the authenticator describes (auth/authenticator.ts describe()); none with authentication off. */
  security?: { schemes: NonNullable<AgentCard["securitySchemes"]>; requirements: NonNullable<AgentCard["security"]> };
  /** Served protocol versions; default: all (the preferred one's interfaces first). */
  protocolVersions?: readonly A2AVersion[];
}

export function buildAgentCard(catalog: WorkflowCatalog, options: AgentCardOptions): AgentCard {
  const preferred = options.interfaces[0];
  if (!preferred) throw new Error("an agent card needs at least one interface");
  return {
    protocolVersion: "0.3.0",
    name: options.name,
    description: options.description,
    url: preferred.url,
    preferredTransport: preferred.transport,
    additionalInterfaces: options.interfaces,
    ...(options.iconUrl ? { iconUrl: options.iconUrl } : {}),
    ...(options.provider
      ? { provider: { organization: options.provider.organization, url: options.provider.url } }
      : {}),
    version: options.version,
    ...(options.documentationUrl ? { documentationUrl: options.documentationUrl } : {}),
    capabilities: {
      streaming: options.streaming,
      pushNotifications: options.pushNotifications,
      stateTransitionHistory: false,
      ...(options.extensions ? { extensions: [...options.extensions] } : {}),
    },
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: ["text/plain", "application/json"],
    skills: catalog.list().map((w) => ({
      id: w.id,
      name: w.name,
      description: w.description,
      tags: w.tags ?? [],
      ...(w.examples ? { examples: w.examples } : {}),
      ...(w.inputModes ? { inputModes: w.inputModes } : {}),
      ...(w.outputModes ? { outputModes: w.outputModes } : {}),
    })),
    supportsAuthenticatedExtendedCard: false,
    supportedInterfaces: versionedInterfaces(options.interfaces, options.protocolVersions ?? A2A_VERSIONS),
    ...(options.security ? { securitySchemes: options.security.schemes, security: options.security.requirements } : {}),
  };
}

/** Each interface once per version, the preferred version first (a v1.0 client takes the first match). */
function versionedInterfaces(interfaces: AgentInterface[], versions: readonly A2AVersion[]): VersionedInterface[] {
  const ordered = [...versions].sort((a, b) =>
    a === PREFERRED_A2A_VERSION ? -1 : b === PREFERRED_A2A_VERSION ? 1 : 0,
  );
  return ordered.flatMap((protocolVersion) =>
    interfaces.map((i) => ({ url: i.url, protocolBinding: i.transport, protocolVersion })),
  );
}
