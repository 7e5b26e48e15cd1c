import type { WorkflowCatalog } from "../engine/workflow-catalog.js";

export type TransportName = "JSONRPC" | "GRPC" | "HTTP+JSON";

export interface AgentInterface {
  url: string;
  transport: TransportName;
}

/** The A2A v0.3 agent card (JSON form). Codecs for other shapes derive from it. */
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
  capabilities: { streaming: boolean; pushNotifications: boolean; stateTransitionHistory: boolean; extensions?: Array<{ uri: string; description?: string; required?: boolean }> };
  securitySchemes?: Record<string, Record<string, unknown>>;
  security?: Array<Record<string, string[]>>;
  defaultInputModes: string[];
  defaultOutputModes: string[];
  skills: Array<{ id: string; name: string; description: string; tags: string[]; examples?: string[]; inputModes?: string[]; outputModes?: string[] }>;
  supportsAuthenticatedExtendedCard: boolean;
}

export interface AgentCardOptions {
  name: string;
  description: string;
  version: string;
  /** The interfaces actually served, preferred first: the first one is the card's `url`. */
  interfaces: AgentInterface[];
  streaming: boolean;
  pushNotifications: boolean;
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
    version: options.version,
    capabilities: { streaming: options.streaming, pushNotifications: options.pushNotifications, stateTransitionHistory: false },
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
  };
}
