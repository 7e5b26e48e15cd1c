import { EgressCallError, type EgressHttpClient, type EgressRequest } from "../../egress/egress-http-client.js";
import { HandlerError } from "../../workflows/workflow-types.js";
import type { NodeHttpClient, NodeHttpRequest } from "./public-node-kind.js";

/**
 * A plugin kind's HTTP client over the host's egress client: any status is answered (the kind reads it), and the
 * egress client's failures become HandlerErrors a kind can pass on as they are: `egress_refused` (the guard's
 * message names the setting that would allow the URL) or `http_call_failed` (retryable when the network or a
 * deadline failed). Without an egress client (an engine built without one) every call fails.
 */
export function nodeHttpClient(client: EgressHttpClient | undefined, kind: string, timeoutMs: number): NodeHttpClient {
  const egress = (): EgressHttpClient => {
    if (!client) throw new HandlerError("http_call_failed", `no HTTP client is configured for ${kind} nodes`);
    return client;
  };
  const requestOf = (req: NodeHttpRequest): EgressRequest => ({
    method: req.method,
    url: req.url,
    ...(req.body !== undefined ? { body: req.body } : {}),
    ...(req.headers ? { headers: req.headers } : {}),
    timeoutMs: req.timeoutMs ?? timeoutMs,
    ...(req.signal ? { signal: req.signal } : {}),
    returnErrorStatus: true,
  });
  return {
    async request(req) {
      try {
        const { status, contentType, body } = await egress().request(requestOf(req));
        return { status, contentType, body };
      } catch (err) {
        throw handlerErrorOf(err);
      }
    },
    async stream(req) {
      let stream;
      try {
        stream = await egress().stream(requestOf(req));
      } catch (err) {
        throw handlerErrorOf(err);
      }
      const { text } = stream;
      return {
        status: stream.status,
        contentType: stream.contentType,
        text: (async function* () {
          try {
            yield* text;
          } catch (err) {
            throw handlerErrorOf(err);
          }
        })(),
      };
    },
  };
}

function handlerErrorOf(err: unknown): unknown {
  if (!(err instanceof EgressCallError)) return err;
  if (err.kind === "egress") return new HandlerError("egress_refused", err.message);
  return new HandlerError("http_call_failed", err.message, err.retryable);
}
