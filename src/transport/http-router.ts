import type { CallContext } from "../auth/call-context.js";
import type { HttpRequest, HttpResponse } from "./http-io.js";

export type RouteHandler = (
  req: HttpRequest,
  res: HttpResponse,
  params: Record<string, string>,
  ctx: CallContext,
) => Promise<void>;

interface Route {
  methods: string[];
  pattern: RegExp;
  template: string;
  names: string[];
  handler: RouteHandler;
}

export type RouteMatch =
  { handler: RouteHandler; params: Record<string, string>; template: string } | { allowed: string[] } | null;

/**
 * Path templates with `{name}` placeholders; a placeholder matches one segment and may be followed by a
 * literal suffix, as in the A2A REST paths (`/v1/tasks/{id}:cancel`).
 */
export class HttpRouter {
  private readonly routes: Route[] = [];

  add(methods: string | string[], template: string, handler: RouteHandler): this {
    const names: string[] = [];
    const source = template
      .split(/(\{[a-zA-Z]+\})/)
      .map((piece) => {
        const name = /^\{([a-zA-Z]+)\}$/.exec(piece)?.[1];
        if (name) {
          names.push(name);
          return "([^/]+?)";
        }
        return piece.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      })
      .join("");
    this.routes.push({ methods: [methods].flat(), pattern: new RegExp(`^${source}$`), template, names, handler });
    return this;
  }

  /** Every registered path template with its methods (the OpenAPI document is checked against this). */
  list(): Array<{ template: string; methods: string[] }> {
    return this.routes.map((r) => ({ template: r.template, methods: [...r.methods] }));
  }

  match(method: string, path: string): RouteMatch {
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const found = route.pattern.exec(path);
      if (!found) continue;
      if (!route.methods.includes(method)) {
        route.methods.forEach((m) => allowed.add(m));
        continue;
      }
      const params: Record<string, string> = {};
      try {
        route.names.forEach((name, i) => (params[name] = decodeURIComponent(found[i + 1]!)));
      } catch {
        continue; // malformed percent-encoding: no route
      }
      return { handler: route.handler, params, template: route.template };
    }
    return allowed.size > 0 ? { allowed: [...allowed] } : null;
  }
}
