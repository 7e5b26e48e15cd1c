import type { EnvReader } from "../domain/env-settings.js";
import type { A2AVersion } from "./protocol-version.js";

/**
 * What the bare `/.well-known/agent-card.json` (no `A2A-Version`) serves (README "Configuration"):
 * `auto`: the hybrid card (0.3 plus the 1.0 `supportedInterfaces`) until the 0.3 legacy window ends, the pure
 * 1.0 card after; `hybrid` or `1.0` force either. An explicit `A2A-Version` always gets its own version's card.
 */
export type BareCardChoice = "auto" | "hybrid" | "1.0";

export interface AgentCardSettings {
  bareCard: BareCardChoice;
  /** `Cache-Control: max-age` of the card and the discovery document. */
  cacheMaxAgeSeconds: number;
}

/** The end of the A2A 0.3 legacy window (OpenWOP RFC 0152): from then on `auto` serves the pure 1.0 card. */
export const A2A_03_LEGACY_WINDOW_ENDS = "2027-03-12T00:00:00.000Z";

/** AGENT_CARD_BARE and AGENT_CARD_MAX_AGE_SECONDS. */
export function readAgentCardSettings(env: EnvReader): AgentCardSettings {
  return {
    bareCard: env.oneOf("AGENT_CARD_BARE", ["auto", "hybrid", "1.0"] as const, "auto"),
    cacheMaxAgeSeconds: env.int("AGENT_CARD_MAX_AGE_SECONDS", 300, 0, 86_400),
  };
}

/** The version whose card document the bare path serves at `now` (0.3's document is the hybrid card). */
export function bareCardVersion(choice: BareCardChoice, now: Date): A2AVersion {
  if (choice === "hybrid") return "0.3";
  if (choice === "1.0") return "1.0";
  return now.getTime() < Date.parse(A2A_03_LEGACY_WINDOW_ENDS) ? "0.3" : "1.0";
}
