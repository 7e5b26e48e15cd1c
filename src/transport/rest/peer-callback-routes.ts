import { readBody, sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";

/** The receiver (engine/peer-callback-service.ts), as this adapter sees it. */
export interface PeerCallbackReceiver {
  receive(req: { taskId: string; headers: Readonly<Record<string, string | undefined>>; body: string }): Promise<{ status: number; outcome: string; retryAfterSeconds?: number }>;
}

export interface PeerCallbackRoutesOptions {
  callbacks: PeerCallbackReceiver;
  maxBodyBytes: number;
}

/**
 * `POST /v1/peer-callbacks/{taskId}`: where peers called by our `a2a.invoke` nodes push their task's changes. No
 * API key (peers do not hold ours): the per-task token (`X-A2A-Notification-Token` or `Authorization: Bearer`) is
 * the credential (who may wake us), checked by the service; the body counts as the peer's word only when signed
 * with the peer's configured key, else it only wakes the node, which reads the peer's task. The raw body is handed
 * over as received (a signature covers its bytes). 2xx only once a signed state is committed or the node woken.
 */
export function addPeerCallbackRoutes(router: HttpRouter, options: PeerCallbackRoutesOptions): void {
  router.add("POST", "/v1/peer-callbacks/{taskId}", async (req, res, params) => {
    const body = (await readBody(req, options.maxBodyBytes)).toString("utf8");
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(req.headers)) headers[name.toLowerCase()] = Array.isArray(value) ? value[0] : value;
    const result = await options.callbacks.receive({ taskId: params["taskId"]!, headers, body });
    const extra: Record<string, string> = result.retryAfterSeconds !== undefined ? { "retry-after": String(result.retryAfterSeconds) } : {};
    if (result.status === 401) extra["www-authenticate"] = 'Bearer realm="openwop-a2a-host peer callbacks"';
    sendJson(res, result.status, { outcome: result.outcome }, extra);
  });
}
