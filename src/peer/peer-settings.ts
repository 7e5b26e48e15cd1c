import { EnvReader, type Env } from "../domain/env-settings.js";
import { readCaBundle } from "../egress/ca-bundle.js";
import type { EgressPolicy } from "../egress/egress-guard.js";
import { key256Problem, parseKey256 } from "../secrets/key-256.js";
import { SecretValue } from "../secrets/secret-value.js";
import { readPeersConfig, type PeerConfig } from "./peer-config.js";

/** How `a2a.invoke` nodes call peers: polling, deadlines and the retry policy of transport errors. */
export interface A2AInvokeSettings {
  /** How often a live peer task is read (`tasks/get`). */
  pollMs: number;
  /** Default for a node without `timeoutMs`: how long the peer may stay submitted/working after each message. */
  timeoutMs: number;
  /** Attempts per call before a transport error fails the node (`external_call_failed`). */
  maxAttempts: number;
  /** Backoff before retry n is retryBaseMs · 2^(n-1), capped at retryMaxMs, with ±20 % jitter. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Deadline of each HTTP request, and of the best-effort cancel. */
  requestTimeoutMs: number;
  /** Register a push config on the peer's task when its card offers push (A2A_PEER_PUSH). */
  push: boolean;
  /** Hold the task's stream when the card offers streaming and push is not used (A2A_PEER_STREAM). */
  streaming: boolean;
  /** With push or a stream, `GetTask` only as a backstop: at most this often (A2A_PEER_BACKSTOP_POLL_MS; at least pollMs). */
  backstopPollMs: number;
  /** A held task stream silent this long is dropped and re-attached (A2A_PEER_STREAM_IDLE_MS). */
  streamIdleMs: number;
}

/** Calls to remote A2A agents (`a2a.invoke` nodes). README "Configuration". */
export interface A2APeerSettings extends A2AInvokeSettings {
  /** `A2A_PEER_CARD_URL`: what `${A2A_PEER_CARD_URL}` in a workflow's agentCardUrl expands to. */
  cardUrl?: string;
  /** `A2A_PEERS` / `A2A_PEERS_FILE`: the peers a node may name (`peer: <name>`), with their credentials (peer-config.ts). */
  peers: ReadonlyMap<string, PeerConfig>;
  /** `A2A_PEER_CALLBACK_URL`: the base of the push callback URL peers are given (default PUBLIC_URL). */
  callbackUrl?: string;
  /** `A2A_PEER_CALLBACK_KEY`: the key of the per-visit callback tokens (32 bytes); absent = generated under DATA_DIR (not in production). */
  callbackKey?: SecretValue<Buffer>;
  /** The egress guard's policy for peer URLs (cards and endpoints): https and public addresses only, unless the test-only loopback allowance is on. */
  egress: EgressPolicy;
  /** `A2A_PEERS_CA_FILE`: CA certificates (PEM) trusted for peers' servers, instead of Node's default ones (a peer's `credentials.mtls.caFile` wins). */
  ca?: string;
}

/** Reads the A2A_PEER_* variables, reporting every problem to `env`. */
export function readPeerSettings(env: EnvReader, production: boolean): A2APeerSettings {
  const cardUrl = env.raw("A2A_PEER_CARD_URL");
  if (cardUrl !== undefined) {
    let ok = false;
    try {
      const parsed = new URL(cardUrl);
      ok = parsed.protocol === "https:" || parsed.protocol === "http:";
    } catch {
      ok = false;
    }
    if (!ok) env.problem(`A2A_PEER_CARD_URL must be an absolute http(s) URL of an agent card (got "${cardUrl}")`);
  }
  const allowLoopback = env.bool("A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS", false);
  if (allowLoopback && production)
    env.problem("A2A_PEER_ALLOW_LOOPBACK_FOR_TESTS is test-only and is refused when NODE_ENV=production");
  const settings: A2AInvokeSettings = {
    pollMs: env.int("A2A_PEER_POLL_MS", 1_000, 10, 60_000),
    timeoutMs: env.int("A2A_PEER_TIMEOUT_MS", 10 * 60 * 1000, 1, 7 * 24 * 3_600_000),
    maxAttempts: env.int("A2A_PEER_MAX_ATTEMPTS", 5, 1, 100),
    retryBaseMs: env.int("A2A_PEER_RETRY_BASE_MS", 500, 1, 600_000),
    retryMaxMs: env.int("A2A_PEER_RETRY_MAX_MS", 10_000, 1, 3_600_000),
    requestTimeoutMs: env.int("A2A_PEER_REQUEST_TIMEOUT_MS", 15_000, 100, 600_000),
    push: env.bool("A2A_PEER_PUSH", true),
    streaming: env.bool("A2A_PEER_STREAM", true),
    backstopPollMs: env.int("A2A_PEER_BACKSTOP_POLL_MS", 60_000, 10, 24 * 3_600_000),
    streamIdleMs: env.int("A2A_PEER_STREAM_IDLE_MS", 60_000, 100, 3_600_000),
  };
  const callbackUrl = env.raw("A2A_PEER_CALLBACK_URL");
  if (callbackUrl !== undefined) {
    let ok = false;
    try {
      const parsed = new URL(callbackUrl);
      ok =
        (parsed.protocol === "https:" || parsed.protocol === "http:") &&
        !parsed.username &&
        !parsed.password &&
        !parsed.search &&
        !parsed.hash;
    } catch {
      ok = false;
    }
    if (!ok)
      env.problem(
        `A2A_PEER_CALLBACK_URL must be an absolute http(s) URL without userinfo, query or fragment (got "${callbackUrl}")`,
      );
  }
  const callbackKeyRaw = env.raw("A2A_PEER_CALLBACK_KEY");
  const callbackKey = callbackKeyRaw !== undefined ? parseKey256(callbackKeyRaw) : undefined;
  if (callbackKeyRaw !== undefined && !callbackKey) env.problem(key256Problem("A2A_PEER_CALLBACK_KEY"));
  // The push keys' rule: production never runs on a generated key, so a host that asks peers to push needs one.
  if (production && settings.push && callbackKeyRaw === undefined) {
    env.problem(
      "NODE_ENV=production with A2A_PEER_PUSH on needs A2A_PEER_CALLBACK_KEY from configuration (the key of peers' callback tokens; `openssl rand -base64 32`), or A2A_PEER_PUSH=false",
    );
  }
  const allowedPorts = env.ports("A2A_PEER_ALLOWED_PORTS");
  const peers = readPeersConfig(env.raw("A2A_PEERS"), env.raw("A2A_PEERS_FILE"), (m) => env.problem(m));
  const caFile = env.raw("A2A_PEERS_CA_FILE");
  const ca = caFile !== undefined ? readCaBundle(caFile, "A2A_PEERS_CA_FILE", (m) => env.problem(m)) : undefined;
  if (settings.retryMaxMs < settings.retryBaseMs)
    env.problem("A2A_PEER_RETRY_MAX_MS must not be smaller than A2A_PEER_RETRY_BASE_MS");
  return {
    ...settings,
    ...(cardUrl !== undefined ? { cardUrl } : {}),
    ...(callbackUrl !== undefined ? { callbackUrl } : {}),
    ...(callbackKey ? { callbackKey: new SecretValue(callbackKey) } : {}),
    peers,
    ...(ca !== undefined ? { ca } : {}),
    // http:// and loopback peers only under the test-only allowance; nothing else private, ever.
    egress: {
      allowHttpLoopback: allowLoopback,
      allowedPorts,
      allowHosts: [],
      denyHosts: [],
      settings: { allowedPorts: "A2A_PEER_ALLOWED_PORTS" },
    },
  };
}

/** `readPeerSettings` on its own: the settings, or every problem as one message. */
export function loadPeerSettings(env: Env, production: boolean): A2APeerSettings | string {
  const reader = new EnvReader(env);
  const settings = readPeerSettings(reader, production);
  return reader.problems.length > 0 ? reader.problems.join("; ") : settings;
}
