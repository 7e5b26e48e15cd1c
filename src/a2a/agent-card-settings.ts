import type { EnvReader } from "../domain/env-settings.js";

/**
 * What the bare `/.well-known/agent-card.json` (no `A2A-Version`) serves (docs/configuration.md):
 * `auto`: the hybrid card (0.3 plus the 1.0 `supportedInterfaces`) until the 0.3 legacy window ends, the pure
 * 1.0 card after; `hybrid` or `1.0` force either; `0.3` forces the pure 0.3 card (no `supportedInterfaces`),
 * which is what OpenWOP RFC 0152 §B expects while 0.3 is advertised ("a card with both shapes is neither").
 * An explicit `A2A-Version` always gets its own version's card.
 */
export type BareCardChoice = "auto" | "hybrid" | "1.0" | "0.3";

/** The documents the bare path can serve: the hybrid 0.3 card, the pure 0.3 card or the pure 1.0 card. */
export type BareCardShape = "hybrid" | "pure-0.3" | "1.0";

/**
 * Who this agent is, on the A2A cards (0.3 and 1.0) and the OpenWOP discovery document. Every field is
 * optional: an unset name is "OpenWOP A2A host", an unset description names the loaded skills, an unset
 * version is the package's.
 */
export interface AgentIdentity {
  name?: string;
  description?: string;
  version?: string;
  provider?: { organization: string; url: string };
  documentationUrl?: string;
  iconUrl?: string;
}

export interface AgentCardSettings {
  bareCard: BareCardChoice;
  /** `Cache-Control: max-age` of the card and the discovery document. */
  cacheMaxAgeSeconds: number;
  /** AGENT_NAME, AGENT_DESCRIPTION, AGENT_VERSION, AGENT_PROVIDER_*, AGENT_DOCUMENTATION_URL, AGENT_ICON_URL. */
  identity: AgentIdentity;
}

/** The end of the A2A 0.3 legacy window (OpenWOP RFC 0152): from then on `auto` serves the pure 1.0 card. */
export const A2A_03_LEGACY_WINDOW_ENDS = "2027-03-12T00:00:00.000Z";

/** AGENT_CARD_BARE, AGENT_CARD_MAX_AGE_SECONDS and the agent's identity (AGENT_*). */
export function readAgentCardSettings(env: EnvReader): AgentCardSettings {
  return {
    bareCard: env.oneOf("AGENT_CARD_BARE", ["auto", "hybrid", "1.0", "0.3"] as const, "auto"),
    cacheMaxAgeSeconds: env.int("AGENT_CARD_MAX_AGE_SECONDS", 300, 0, 86_400),
    identity: readAgentIdentity(env),
  };
}

/** The AGENT_* variables; a provider needs both its organization and its URL. */
function readAgentIdentity(env: EnvReader): AgentIdentity {
  const text = (name: string) => env.raw(name)?.trim() || undefined;
  const name = text("AGENT_NAME");
  const description = text("AGENT_DESCRIPTION");
  const version = text("AGENT_VERSION");
  const organization = text("AGENT_PROVIDER_ORGANIZATION");
  const providerUrl = env.optionalUrl("AGENT_PROVIDER_URL");
  if (organization !== undefined && text("AGENT_PROVIDER_URL") === undefined) {
    env.problem("AGENT_PROVIDER_ORGANIZATION needs AGENT_PROVIDER_URL too (the card's provider has both or neither)");
  }
  if (organization === undefined && text("AGENT_PROVIDER_URL") !== undefined) {
    env.problem("AGENT_PROVIDER_URL needs AGENT_PROVIDER_ORGANIZATION too (the card's provider has both or neither)");
  }
  const documentationUrl = env.optionalUrl("AGENT_DOCUMENTATION_URL");
  const iconUrl = env.optionalUrl("AGENT_ICON_URL");
  return {
    ...(name !== undefined ? { name } : {}),
    ...(description !== undefined ? { description } : {}),
    ...(version !== undefined ? { version } : {}),
    ...(organization !== undefined && providerUrl !== undefined
      ? { provider: { organization, url: providerUrl } }
      : {}),
    ...(documentationUrl !== undefined ? { documentationUrl } : {}),
    ...(iconUrl !== undefined ? { iconUrl } : {}),
  };
}

/** The card document the bare path serves at `now`. */
export function bareCardShape(choice: BareCardChoice, now: Date): BareCardShape {
  if (choice === "0.3") return "pure-0.3";
  if (choice === "hybrid") return "hybrid";
  if (choice === "1.0") return "1.0";
  return now.getTime() < Date.parse(A2A_03_LEGACY_WINDOW_ENDS) ? "hybrid" : "1.0";
}
