import type { Config } from "./config/config.js";
import { loadInterruptTokenKeys } from "./interrupts/interrupt-token-keys.js";
import { InterruptTokenSigner } from "./interrupts/interrupt-tokens.js";
import type { Logger } from "./observability/logger.js";
import { loadPeerCallbackKey } from "./peer/peer-callback-key.js";
import { PeerCallbackKey } from "./peer/peer-callbacks.js";
import { resolvePushKeys, type PushKeys } from "./push/push-keys.js";
import { loadEvidenceKey, type EvidenceKey } from "./secrets/evidence-key.js";
import { loadSigningKeyRing, type SigningKeyRing } from "./secrets/signing-key-ring.js";

/** Every key the host holds, each from its own setting (or, outside production, generated once under DATA_DIR). */
export interface HostKeys {
  /** SIGNING_KEYS: push JWTs, the card's signature, the JWKS at /.well-known/jwks.json. */
  signingKeys: SigningKeyRing;
  /** EVIDENCE_SIGNING_KEY (or generated under DATA_DIR outside production): signs evidence bundles; none in production without it. */
  evidence: EvidenceKey | undefined;
  /** INTERRUPT_TOKEN_KEYS: signs and checks interrupt tokens (REST interrupts API, console). */
  tokens: InterruptTokenSigner;
  /** PUSH_ENCRYPTION_KEY, PUSH_SIGNING_KEY: stored push secrets and webhook signatures; none with push off. */
  push: PushKeys | undefined;
  /** A2A_PEER_CALLBACK_KEY: a2a.invoke's per-visit callback tokens; none when peers are not asked to push. */
  peerCallback: PeerCallbackKey | undefined;
}

/** Loads the keys before anything that uses them is built: a missing or bad key stops the start with nothing running. */
export async function loadHostKeys(config: Config, logger: Logger): Promise<HostKeys> {
  const production = config.env === "production";
  const signingKeys = await loadSigningKeyRing({
    ...(config.signingKeys.keys ? { configured: config.signingKeys.keys } : {}),
    dataDir: config.dataDir,
    production,
  });
  const evidence = await loadEvidenceKey({
    ...(config.signingKeys.evidenceKey ? { configured: config.signingKeys.evidenceKey } : {}),
    dataDir: config.dataDir,
    production,
  });
  const push = config.push.enabled ? await resolvePushKeys(config.push, config.dataDir) : undefined;
  const tokenKeys = await loadInterruptTokenKeys({
    configured: config.interruptTokens.keys?.reveal(),
    dataDir: config.dataDir,
    production,
  });
  // a2a.invoke learns by push where the peer offers it: per-visit callback tokens under a key of their own,
  // never the push key. Without one, peers are simply not asked to push (the node streams or polls).
  const peerCallback = config.a2aPeer.push
    ? await loadPeerCallbackKey({
        ...(config.a2aPeer.callbackKey ? { configured: config.a2aPeer.callbackKey } : {}),
        dataDir: config.dataDir,
        production,
      }).then(
        (loaded) => new PeerCallbackKey(loaded.key),
        (err: unknown) => {
          logger.warn(
            { err: err instanceof Error ? err.message : String(err) },
            "a2a.invoke: no peer callback key, so peers are not asked to push (stream or poll instead)",
          );
          return undefined;
        },
      )
    : undefined;
  return {
    signingKeys,
    evidence,
    tokens: new InterruptTokenSigner(tokenKeys.keys, { ttlMs: config.interruptTokens.ttlMs }),
    push,
    peerCallback,
  };
}
