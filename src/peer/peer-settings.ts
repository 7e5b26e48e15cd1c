import type { A2AInvokeSettings } from "../engine/a2a-invoke-runner.js";
import type { EgressPolicy } from "../push/push-egress-guard.js";

/** Calls to remote A2A agents (`a2a.invoke` nodes). README "Configuration". */
export interface A2APeerSettings extends A2AInvokeSettings {
  /** `A2A_PEER_CARD_URL`: what `${A2A_PEER_CARD_URL}` in a workflow's agentCardUrl expands to. */
  cardUrl?: string;
  /** The egress guard's policy for peer URLs (cards and endpoints): https and public addresses only, unless the test-only loopback allowance is on. */
  egress: EgressPolicy;
}

type Env = Record<string, string | undefined>;

function intIn(env: Env, name: string, fallback: number, min: number, max: number): number | string {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  return Number.isInteger(value) && value >= min && value <= max ? value : `${name} must be a whole number between ${min} and ${max} (got "${raw}")`;
}

/** Reads the A2A_PEER_* variables. Returns an error message instead of throwing, so config.ts keeps one error type. */
export function loadPeerSettings(env: Env, production: boolean): A2APeerSettings | string {
  const cardUrl = env["A2A_PEER_CARD_URL"] || undefined;
  if (cardUrl !== undefined) {
    let ok = false;
    try {
      const parsed = new URL(cardUrl);
      ok = parsed.protocol === "https:" || parsed.protocol === "http:";
    } catch {
      ok = false;
    }
    if (!ok) return `A2A_PEER_CARD_URL must be an absolute http(s) URL of an agent card (got "${cardUrl}")`;
  }
  const loopbackRaw = env["A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS"] ?? "";
  if (!["", "true", "false", "1", "0"].includes(loopbackRaw)) return `A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS must be true or false (got "${loopbackRaw}")`;
  const allowLoopback = loopbackRaw === "true" || loopbackRaw === "1";
  if (allowLoopback && production) return "A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production";
  const numbers = {
    pollMs: intIn(env, "A2A_PEER_POLL_MS", 1_000, 10, 60_000),
    timeoutMs: intIn(env, "A2A_PEER_TIMEOUT_MS", 10 * 60 * 1000, 1, 7 * 24 * 3_600_000),
    maxAttempts: intIn(env, "A2A_PEER_MAX_ATTEMPTS", 5, 1, 100),
    retryBaseMs: intIn(env, "A2A_PEER_RETRY_BASE_MS", 500, 1, 600_000),
    retryMaxMs: intIn(env, "A2A_PEER_RETRY_MAX_MS", 10_000, 1, 3_600_000),
    requestTimeoutMs: intIn(env, "A2A_PEER_REQUEST_TIMEOUT_MS", 15_000, 100, 600_000),
  };
  for (const value of Object.values(numbers)) if (typeof value === "string") return value;
  const allowedPorts: number[] = [];
  for (const entry of (env["A2A_PEER_ALLOWED_PORTS"] ?? "").split(",").map((p) => p.trim()).filter(Boolean)) {
    const port = Number(entry);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return `A2A_PEER_ALLOWED_PORTS must be a comma-separated list of ports (got "${entry}")`;
    allowedPorts.push(port);
  }
  const settings = numbers as { [K in keyof typeof numbers]: number };
  if (settings.retryMaxMs < settings.retryBaseMs) return "A2A_PEER_RETRY_MAX_MS must not be smaller than A2A_PEER_RETRY_BASE_MS";
  return {
    ...settings,
    ...(cardUrl ? { cardUrl } : {}),
    // http:// and loopback peers only under the test-only allowance; nothing else private, ever.
    egress: { allowHttpLoopback: allowLoopback, allowedPorts, allowHosts: [], denyHosts: [] },
  };
}
