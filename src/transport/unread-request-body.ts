import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

/**
 * The rest of a refused HTTP/1.1 body is read and dropped when the request declares a length up to this
 * (the connection then keeps working); a longer or chunked one closes the connection after the answer.
 */
export const UNREAD_BODY_DRAIN_BYTES = 4 * 1024 * 1024;

/**
 * An HTTP/1.1 answer that goes out before its request body was read to its end (a body over MAX_BODY_BYTES,
 * an RPC refused from its headers, a 401 before the body) must not leave the connection stuck: the next
 * request on it cannot be parsed until the rest of this body has gone by, and once a reader has stopped
 * midway nobody pulls it any more (Node drains an unread body itself only if nothing ever read from it). The
 * caller's next request on its keep-alive connection would then wait forever.
 *
 * So, before the answer's head goes out: a body that declares at most UNREAD_BODY_DRAIN_BYTES is drained
 * (read and dropped as it arrives; HTTP_REQUEST_TIMEOUT_MS still bounds a slow one) and the connection keeps
 * working; a chunked body (its length unknown) or a longer one gets `Connection: close`, and Node closes the
 * socket once the answer is sent. HTTP/2 streams end on their own (gRPC: `resetUnreadRequestAfterTrailers`).
 * Call it only when nothing else reads the body any more.
 */
export function settleUnreadBody(
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
): void {
  if ("stream" in req || req.complete || res.headersSent) return;
  const chunked = req.headers["transfer-encoding"] !== undefined;
  const declared = Number(req.headers["content-length"] ?? 0);
  // No body at all (a GET: `complete` is set only after the request handler's first turn).
  if (!chunked && !(declared > 0)) return;
  if (!chunked && declared <= UNREAD_BODY_DRAIN_BYTES) {
    drain(req);
    return;
  }
  (res as ServerResponse).setHeader("connection", "close");
}

/**
 * Reads and drops what is left. `read()` on "readable" works whatever read before: `resume()` does nothing
 * while a reader that stopped (an abandoned async iterator) still listens for "readable".
 */
function drain(req: IncomingMessage): void {
  const drop = (): void => {
    while (req.read() !== null);
  };
  req.on("readable", drop);
  drop();
}
