import type { HttpRouter } from "../http-router.js";
import { sendCacheableJson } from "../cacheable-json.js";

export const JWKS_PATH = "/.well-known/jwks.json";

/**
 * The public halves of the host's signing keys (push JWTs, the card's signature): receivers verify with
 * them, e.g. jose's createRemoteJWKSet, which refetches on an unknown `kid`. Public, and cacheable only
 * briefly so an added key is seen well before it starts signing.
 */
export function addJwksRoute(
  router: HttpRouter,
  options: { jwks: () => { keys: object[] }; maxAgeSeconds: number; clock?: () => Date },
): void {
  const startedAt = (options.clock ?? (() => new Date()))();
  router.add(["GET", "HEAD"], JWKS_PATH, async (req, res) =>
    sendCacheableJson(req, res, options.jwks(), {
      maxAgeSeconds: options.maxAgeSeconds,
      lastModified: startedAt,
      headers: { "content-type": "application/jwk-set+json" },
    }),
  );
}
