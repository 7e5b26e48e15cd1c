import { a2aVersionOf, type A2AVersion } from "../../domain/a2a-version.js";
import { parseJsonBody } from "../../domain/json-input.js";
import type { RestRequest, RestRoute } from "../../a2a/version-module.js";
import { versionModule, type BoundVersions } from "../../a2a/versions.js";
import { httpJsonError } from "../errors/a2a-error-exits.js";
import { statusHeaders, type ReportError } from "../errors/wire-error.js";
import {
  mediaTypeOf,
  readBody,
  sendJson,
  sharedJsonText,
  streamToSse,
  type HttpRequest,
  type HttpResponse,
} from "../http-io.js";
import { HttpRouter, type RouteHandler } from "../http-router.js";

export interface A2ARestRouterOptions {
  versions: BoundVersions;
  report: ReportError;
  maxBodyBytes: number;
  maxInputDepth: number;
}

/**
 * The HTTP+JSON binding of every registered A2A version: one router per version, built from the routes
 * its folder declares as data. Each route checks `A2A-Version` and runs decode → operation → encode;
 * errors answer through the HTTP+JSON exit in its version's shape.
 */
export function createA2ARestRouters(options: A2ARestRouterOptions): Map<A2AVersion, HttpRouter> {
  const routers = new Map<A2AVersion, HttpRouter>();
  for (const [version, bindings] of options.versions) {
    const router = new HttpRouter();
    for (const route of bindings.rest) router.add([...route.methods], route.path, handlerOf(version, route, options));
    routers.set(version, router);
  }
  return routers;
}

/** Errors before anything is written leave through the dispatcher's exit for this route's binding (this version's HTTP+JSON shape). */
function handlerOf(version: A2AVersion, route: RestRoute, options: A2ARestRouterOptions): RouteHandler {
  const mediaType = versionModule(version).restMediaType;
  const served = [...options.versions.keys()];
  return async (req, res, params, ctx) => {
    a2aVersionOf(req, served); // an A2A-Version we do not serve: 400 VersionNotSupported
    const request = restRequestOf(req, params, options);
    if (route.kind === "unary") {
      const body = await route.run(request, ctx);
      sendJson(res, route.status ?? 200, body, { "content-type": mediaType });
      return;
    }
    // A stream route answers once its request is decoded (a bad one: a plain HTTP error).
    const events = await (route.run(request, ctx) as Promise<AsyncIterable<unknown>>);
    await streamToSse(res, events, {
      encode: sharedJsonText,
      // Nothing streamed yet: a plain HTTP error (404 unknown task, 400 bad message...).
      failedBeforeFirst: (err) => {
        throw err;
      },
      errorFrame: (err) => httpJsonError(version, options.report(err, { route: route.name })).body,
    });
  };
}

/** The HTTP+JSON error exit: status, body and media type of `version`. */
export function sendA2ARestError(
  res: HttpResponse,
  version: A2AVersion,
  err: unknown,
  headers: Record<string, string> = {},
): void {
  const { status, body, contentType } = httpJsonError(version, err);
  sendJson(res, status, body, { "content-type": contentType, ...statusHeaders(status, err), ...headers });
}

function restRequestOf(
  req: HttpRequest,
  params: Record<string, string>,
  limits: { maxBodyBytes: number; maxInputDepth: number },
): RestRequest {
  return {
    method: req.method ?? "GET",
    params,
    query: new URL(req.url ?? "/", "http://host").searchParams,
    mediaType: mediaTypeOf(req),
    contentType: String(req.headers["content-type"] ?? ""),
    body: () => readBody(req, limits.maxBodyBytes),
    parseJson: (raw) => parseJsonBody(raw, limits.maxInputDepth),
  };
}
