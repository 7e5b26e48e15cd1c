import type { EgressHttpClient } from "./egress-http-client.js";

/** The `fetch` shape libraries take as a custom fetch (jose's `[customFetch]`, OIDC discovery). */
export type GuardedFetch = (
  url: string,
  init?: {
    method?: string;
    headers?: ConstructorParameters<typeof Headers>[0];
    body?: string;
    signal?: AbortSignal | null;
  },
) => Promise<Response>;

/** Statuses whose Response may not have a body. */
const NULL_BODY = new Set([204, 205, 304]);

/**
 * A `fetch` over the egress client, for libraries that fetch on their own (jose's remote JWKS): the same guard,
 * pinning, no redirects (a 3xx rejects), size cap and deadline as every other outbound call. Only what a JSON
 * fetch needs: the method, headers, a string body and the signal; the answer carries its status, content type
 * and text. A signal that fires (jose's timeout) rejects with its reason, as fetch does.
 */
export function egressFetch(client: Pick<EgressHttpClient, "request">, timeoutMs: number): GuardedFetch {
  return async (url, init = {}) => {
    const method = (init.method ?? "GET").toUpperCase();
    if (method !== "GET" && method !== "POST") throw new TypeError(`egressFetch: method ${method} is not supported`);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const signal = init.signal ?? undefined;
    try {
      const answer = await client.request({
        method,
        url,
        headers,
        timeoutMs,
        returnErrorStatus: true,
        ...(init.body !== undefined ? { body: init.body } : {}),
        ...(signal ? { signal } : {}),
      });
      return new Response(NULL_BODY.has(answer.status) ? null : answer.body, {
        status: answer.status,
        headers: answer.contentType ? { "content-type": answer.contentType } : {},
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw err;
    }
  };
}
