import { negotiateA2AVersion, requestedA2AVersion, type A2AVersion } from "../domain/a2a-version.js";
import { noteRequest } from "../observability/request-notes.js";

type HeaderBag = Record<string, string | string[] | undefined>;

/**
 * `negotiateA2AVersion`, with its decision noted on the call (served or refused) for the host's
 * `negotiation.decided` log, which the request observer writes when the call ends.
 */
export function negotiateNoted(raw: string | undefined | null, served: readonly A2AVersion[]): A2AVersion {
  const named = raw?.trim() ? raw.trim().slice(0, 40) : undefined;
  try {
    const version = negotiateA2AVersion(raw, served);
    noteRequest({ a2aNegotiation: { ...(named ? { requested: named } : {}), negotiated: version } });
    return version;
  } catch (err) {
    noteRequest({ a2aNegotiation: { ...(named ? { requested: named } : {}), negotiated: null } });
    throw err;
  }
}

/** The same, from an HTTP request's header or query parameter. */
export function a2aVersionNoted(
  req: { headers: HeaderBag; url?: string | undefined },
  served: readonly A2AVersion[],
): A2AVersion {
  return negotiateNoted(requestedA2AVersion(req.headers, req.url), served);
}
