import { a2aVersionOf, requestedA2AVersion, type A2AVersion } from "../domain/a2a-version.js";
import { DEFAULT_A2A_VERSION } from "../a2a/versions.js";
import { challengeHeaders, type Authenticator, type Challenges, type HeaderLookup } from "../auth/authenticator.js";
import type { CallContext } from "../auth/call-context.js";
import type { Principal } from "../auth/principal.js";
import { DomainError } from "../domain/errors.js";
import { noteRequest } from "../observability/request-notes.js";
import { jsonRpcErrorBody } from "./errors/a2a-error-exits.js";
import { sendOpenwopError } from "./errors/openwop-error-exit.js";
import { sendOpenwopV2Error } from "./errors/openwop-v2-error-exit.js";
import {
  isProtocolPath,
  negotiatedMajor,
  OPENWOP_CONTRACTS,
  OPENWOP_VERSION_HEADER,
  refusalMajor,
  type OpenwopMajor,
  type OpenwopVersions,
} from "./openwop-version.js";
import { retryAfterOf, wireErrorOf, type ReportError } from "./errors/wire-error.js";
import { activatedExtensions } from "./extensions-header.js";
import { sendJson, type HttpRequest, type HttpResponse } from "./http-io.js";
import { verifiedPeerCertificate } from "./peer-certificate.js";
import type { HttpRouter, RouteHandler } from "./http-router.js";
import { sendA2ARestError } from "./rest/a2a-rest-router.js";

/** The binding a request reached; it shapes every error the request gets, including 401, 404 and 405. */
export type Binding =
  { kind: "jsonrpc" } | { kind: "a2a-rest"; version: A2AVersion } | { kind: "openwop"; major?: OpenwopMajor };

export interface RequestDispatchOptions {
  jsonRpcPath: string;
  jsonRpc: (req: HttpRequest, res: HttpResponse, ctx: CallContext) => Promise<void>;
  /** A JSON-RPC call refused before it runs (authentication): answered with the request's id when it can be read. */
  jsonRpcRefused: (req: HttpRequest, res: HttpResponse, err: unknown, headers: Record<string, string>) => Promise<void>;
  /** The A2A HTTP+JSON routers, one per version. */
  a2aRest: ReadonlyMap<A2AVersion, HttpRouter>;
  /** OpenWOP REST, discovery and operator routes. */
  openwop: HttpRouter;
  /** Connect, gRPC and gRPC-Web calls: authenticated by the Connect handler's own interceptor. */
  rpc: { handles(req: HttpRequest): boolean; handle(req: HttpRequest, res: HttpResponse): void };
  authenticator: Authenticator;
  /** The refusals' `WWW-Authenticate` (auth/authenticator.ts bearerChallenges); the plain one by default. */
  challenges?: Challenges;
  /** Paths without credentials; their handlers see `publicPrincipal`. */
  publicPaths: RegExp[];
  publicPrincipal: Principal;
  supportedExtensions: string[];
  report: ReportError;
  shutdownSignal: AbortSignal;
  /** The OpenWOP majors served (versioning.md §1): negotiated before authentication on protocol paths. */
  openwopVersions?: OpenwopVersions;
}

interface Candidate {
  binding: Binding;
  match(method: string, path: string): ReturnType<HttpRouter["match"]>;
}

/**
 * Every HTTP request's way in: match a route (which names the binding), authenticate (one step, before
 * dispatch), then run the route. Failures before the route runs leave through the matched binding's error
 * exit; a request no route knows answers in the A2A HTTP+JSON shape of the version it names, else in the
 * OpenWOP envelope. A path that two routers read (`/v1/tasks/{id}`: 0.3, or 1.0 in tenant "v1") goes to the
 * requested version's router first.
 */
export function createRequestDispatch(
  options: RequestDispatchOptions,
): (req: HttpRequest, res: HttpResponse) => Promise<void> {
  const { report } = options;
  const challenges = options.challenges ?? challengeHeaders;
  const jsonRpc: Candidate = {
    binding: { kind: "jsonrpc" },
    match: (_method, path) =>
      path === options.jsonRpcPath
        ? {
            handler: (req, res, _params, ctx) => options.jsonRpc(req, res, ctx),
            params: {},
            template: options.jsonRpcPath,
          }
        : null,
  };
  const openwop: Candidate = {
    binding: { kind: "openwop" },
    match: (method, path) => options.openwop.match(method, path),
  };
  const a2a = [...options.a2aRest].map(([version, router]): Candidate => ({
    binding: { kind: "a2a-rest", version },
    match: (method, path) => router.match(method, path),
  }));

  // The JSON-RPC endpoint is one fixed path: its route is known without parsing the URL or trying routers.
  const jsonRpcRoute: Found = {
    binding: jsonRpc.binding,
    ...(jsonRpc.match("POST", options.jsonRpcPath) as {
      handler: RouteHandler;
      params: Record<string, string>;
      template: string;
    }),
  };
  const jsonRpcPublic = options.publicPaths.some((p) => p.test(options.jsonRpcPath));
  // Each request's signal is its own controller; shutdown aborts those in flight (AbortSignal.any per request cost more).
  const inFlight = new Set<AbortController>();
  const { shutdownSignal } = options;
  shutdownSignal.addEventListener(
    "abort",
    () => {
      for (const controller of inFlight) controller.abort(shutdownSignal.reason);
    },
    { once: true },
  );

  const served = [...options.a2aRest.keys()];
  function candidatesFor(req: HttpRequest): Candidate[] {
    const requested = requestedVersion(req, served) ?? DEFAULT_A2A_VERSION;
    const first = a2a.filter((c) => c.binding.kind === "a2a-rest" && c.binding.version === requested);
    return [jsonRpc, ...first, openwop, ...a2a.filter((c) => !first.includes(c))];
  }

  function sendError(res: HttpResponse, binding: Binding, err: unknown, headers: Record<string, string> = {}): void {
    const domain = report(err, { binding: binding.kind });
    if (binding.kind === "jsonrpc")
      sendJson(
        res,
        wireErrorOf(domain, DEFAULT_A2A_VERSION).http,
        jsonRpcErrorBody(DEFAULT_A2A_VERSION, null, domain),
        { ...retryAfterOf(domain), ...headers },
      );
    else if (binding.kind === "a2a-rest") sendA2ARestError(res, binding.version, domain, headers);
    else if (binding.major === 2) sendOpenwopV2Error(res, domain, headers);
    else sendOpenwopError(res, domain, headers);
  }

  return async (req, res) => {
    const jsonRpcCall = req.url === options.jsonRpcPath;
    // JSON-RPC echoes activated extensions itself (its error paths write their own headers).
    if (!jsonRpcCall && !req.url?.startsWith(options.jsonRpcPath)) {
      for (const [name, value] of Object.entries(activatedExtensions(req, options.supportedExtensions)))
        res.setHeader(name, value);
    }
    if (!jsonRpcCall && options.rpc.handles(req)) return options.rpc.handle(req, res);
    const requestDone = new AbortController();
    if (shutdownSignal.aborted) requestDone.abort(shutdownSignal.reason);
    inFlight.add(requestDone);
    let handled = false;
    res.on("close", () => {
      inFlight.delete(requestDone);
      // Once the handler is done nothing listens any more; before, the caller going away stops its work.
      // A fixed reason: abort() without one builds a DOMException (with its stack).
      if (!handled) requestDone.abort(CALLER_GONE);
    });
    const method = req.method ?? "GET";
    const asked = jsonRpcCall ? options.jsonRpcPath : new URL(req.url ?? "/", "http://host").pathname;
    let found = jsonRpcCall ? jsonRpcRoute : route(candidatesFor(req), method, asked);
    // One trailing slash on a known route is ignored (`/v1/runs/`, `/tasks/{id}/`, `/message:send/`), for
    // every method: the route answers as without it. Routes registered with the slash match first.
    let path = asked;
    if (!found && asked.length > 1 && asked.endsWith("/")) {
      found = route(candidatesFor(req), method, asked.slice(0, -1));
      if (found) path = asked.slice(0, -1);
    }
    let binding = found?.binding ?? fallbackBinding(req, served);
    // OpenWOP protocol paths: the major is chosen before anything else, and every answer names it.
    if (binding.kind === "openwop" && options.openwopVersions && isProtocolPath(path)) {
      let major: OpenwopMajor;
      try {
        major = negotiatedMajor(req, path, options.openwopVersions);
      } catch (err) {
        const refusedUnder = refusalMajor(options.openwopVersions, err);
        res.setHeader(OPENWOP_VERSION_HEADER, OPENWOP_CONTRACTS[refusedUnder]);
        return sendError(res, { kind: "openwop", major: refusedUnder }, err);
      }
      res.setHeader(OPENWOP_VERSION_HEADER, OPENWOP_CONTRACTS[major]);
      binding = { kind: "openwop", major };
    }
    let principal: Principal;
    const headers: HeaderLookup = (name) => headerValue(req, name);
    try {
      const isPublic = jsonRpcCall ? jsonRpcPublic : options.publicPaths.some((p) => p.test(path));
      const answer = isPublic
        ? options.publicPrincipal
        : options.authenticator.authenticate({ headers, peerCertificate: verifiedPeerCertificate(req.socket) });
      // API keys and certificates answer synchronously; only a token check (JWKS) costs a promise hop.
      principal = answer instanceof Promise ? await answer : answer;
    } catch (err) {
      const challenge = challenges(headers, err);
      if (binding.kind === "jsonrpc" && found && "handler" in found)
        return options.jsonRpcRefused(req, res, err, challenge);
      sendError(res, binding, err, challenge);
      return;
    }
    noteRequest({
      tenant: principal.tenant,
      ...(found && "template" in found ? { method: `${method} ${found.template}` } : {}),
    });
    if (!found) return sendError(res, binding, new DomainError("route-not-found", `no route for ${method} ${path}`));
    if ("allowed" in found) {
      return sendError(
        res,
        binding,
        new DomainError("method-not-allowed", `${method} is not allowed on ${path}`, { allowed: found.allowed }),
        { allow: found.allowed.join(", ") },
      );
    }
    const lastEventId = headers("last-event-id");
    const ctx: CallContext = {
      principal,
      signal: requestDone.signal,
      ...(lastEventId !== undefined ? { resumeFrom: lastEventId } : {}),
    };
    try {
      await found.handler(req, res, found.params, ctx);
    } catch (err) {
      // A bearer caller without the scope gets RFC 6750's insufficient_scope challenge with its 403.
      if (!res.headersSent) sendError(res, binding, err, challenges(headers, err));
      else res.end();
    } finally {
      handled = true;
    }
  };
}

const CALLER_GONE = Object.assign(new Error("the caller went away"), { code: "ERR_CALLER_GONE" });

type Found =
  | { binding: Binding; handler: RouteHandler; params: Record<string, string> }
  | { binding: Binding; allowed: string[] }
  | null;

/** The first route that takes the method; else the first path that matched with other methods (405). */
function route(candidates: Candidate[], method: string, path: string): Found {
  let allowed: Found = null;
  for (const candidate of candidates) {
    const match = candidate.match(method, path);
    if (match && "handler" in match) return { binding: candidate.binding, ...match };
    if (match && !allowed) allowed = { binding: candidate.binding, allowed: match.allowed };
  }
  return allowed;
}

/** The A2A version a request explicitly names (header or query), if it is one we serve. */
function requestedVersion(req: HttpRequest, served: readonly A2AVersion[]): A2AVersion | undefined {
  if (requestedA2AVersion(req.headers, req.url) === undefined) return undefined;
  try {
    return a2aVersionOf(req, served);
  } catch {
    return undefined;
  }
}

/** No route: an explicit A2A-Version means an A2A HTTP+JSON caller; anyone else reads the OpenWOP envelope. */
function fallbackBinding(req: HttpRequest, served: readonly A2AVersion[]): Binding {
  const version = requestedVersion(req, served);
  return version ? { kind: "a2a-rest", version } : { kind: "openwop" };
}

function headerValue(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
