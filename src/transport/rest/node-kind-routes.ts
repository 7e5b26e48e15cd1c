import { readBody, sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";

/** A node kind's route (engine/nodes/node-kind.ts: NodeRoute), as this adapter sees it. */
export interface NodeKindRoute {
  method: "POST" | "GET";
  path: string;
  public: boolean;
  handle(request: {
    params: Readonly<Record<string, string>>;
    headers: Readonly<Record<string, string | undefined>>;
    body: string;
  }): Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;
}

/**
 * The routes node kinds serve (a2a.invoke: `POST /v1/peer-callbacks/{taskId}`, where peers push their task's
 * changes). The raw body is handed over as received (a signature may cover its bytes), the headers with lower-case
 * names; the kind answers status, JSON body and headers.
 */
export function addNodeKindRoutes(
  router: HttpRouter,
  options: { routes: readonly NodeKindRoute[]; maxBodyBytes: number },
): void {
  for (const route of options.routes) {
    router.add(route.method, route.path, async (req, res, params) => {
      const body = (await readBody(req, options.maxBodyBytes)).toString("utf8");
      const headers: Record<string, string | undefined> = {};
      for (const [name, value] of Object.entries(req.headers))
        headers[name.toLowerCase()] = Array.isArray(value) ? value[0] : value;
      const answer = await route.handle({ params, headers, body });
      sendJson(res, answer.status, answer.body, answer.headers ?? {});
    });
  }
}

/** The routes that check their own credential (no API key): everything under each one's path up to its first parameter. */
export function publicNodeKindPaths(routes: readonly NodeKindRoute[]): RegExp[] {
  return routes
    .filter((r) => r.public)
    .map((r) => new RegExp(`^${r.path.split("{")[0]!.replace(/[.*+?^$()|[\]\\/]/g, "\\$&")}`));
}
