import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { projectRoot } from "./domain/project-root.js";
import { createCore, JSONRPC_PATH, OPENWOP_EXTENSION_URI, packageVersion, type CoreOptions } from "./core.js";
import type { TaskService } from "./a2a/task-service.js";
import type { CallContext } from "./auth/call-context.js";
import { DomainError } from "./domain/errors.js";
import type { TaskSupervisor } from "./engine/task-supervisor.js";
import { apiKeyAuthenticator, devAuthenticator } from "./auth/api-key-authenticator.js";
import type { Principal } from "./auth/principal.js";
import type { PushNotifications } from "./push/push-notifications.js";
import { addPushRoutes } from "./transport/rest/push-routes.js";
import { createA2AConnectHandler, isA2ARpcPath } from "./transport/connect/a2a-connect-handler.js";
import { createV10RestRouter, matchA2ARoute } from "./transport/rest/a2a-v10-rest-routes.js";
import { DualProtocolServer } from "./transport/http-server.js";
import { sendJson, type HttpRequest, type HttpResponse } from "./transport/http-io.js";
import { HttpRouter } from "./transport/http-router.js";
import { createJsonRpcEndpoint } from "./transport/jsonrpc/jsonrpc-endpoint.js";
import { jsonRpcError } from "./transport/jsonrpc/jsonrpc-errors.js";
import { activatedExtensions } from "./transport/extensions-header.js";
import { addV03RestRoutes } from "./transport/rest/a2a-v03-rest-routes.js";
import { addDiscoveryRoutes, CONFORMANCE_FIXTURES } from "./transport/rest/discovery-routes.js";
import { addConformanceSeamRoutes } from "./transport/rest/conformance-seam-routes.js";
import { addOpenwopInterruptRoutes } from "./transport/rest/openwop-interrupt-routes.js";
import { addOpenwopRunsRoutes } from "./transport/rest/openwop-runs-routes.js";
import { sendOpenwopError } from "./transport/rest/openwop-errors.js";
import { ConsolePush } from "./a2a/console-push.js";
import { ConsoleOperations } from "./runs/console-operations.js";
import { CONSOLE_PUBLIC_PATH } from "./transport/console/console-assets.js";
import { addConsoleRoutes } from "./transport/console/console-routes.js";

export { JSONRPC_PATH, OPENWOP_EXTENSION_URI };
const SUPPORTED_EXTENSIONS = [OPENWOP_EXTENSION_URI];

export interface AppOptions extends CoreOptions {
  durableStore: boolean;
}

export interface App {
  supervisor: TaskSupervisor;
  service: TaskService;
  /** Push notifications: the registration service, the delivery worker (when enabled), a start-up phrase. */
  push: PushNotifications;
  /** Starts listening and resumes every unfinished task. */
  listen(): Promise<AddressInfo>;
  /** Graceful shutdown: ends streams, drains requests, stops the supervisor. The store stays open. */
  close(): Promise<void>;
}

/**
 * Paths without an API key: discovery, health, and signed interrupt tokens (the token is the credential).
 * Their handlers see a principal that belongs to no tenant and holds no scope.
 */
const PUBLIC_PATHS = [/^\/\.well-known\//, /^\/healthz$/, /^\/v1\/interrupts\//, CONSOLE_PUBLIC_PATH];
const PUBLIC_PRINCIPAL: Principal = { tenant: "", id: "public", scopes: [] };

export async function createApp(options: AppOptions): Promise<App> {
  const { config, logger } = options;
  const core = await createCore(options);
  const { catalog, supervisor, service, push, card, runs, runInterrupts, feed } = core;
  const authenticator = config.auth.mode === "apikey" ? apiKeyAuthenticator(config.auth.keys) : devAuthenticator;
  if (authenticator.enabled) {
    card.securitySchemes = { apiKey: { type: "http", scheme: "bearer", description: "An API key issued by the operator: Authorization: Bearer <key>" } };
    card.security = [{ apiKey: [] }];
  }

  const router = new HttpRouter();
  const jsonRpc = createJsonRpcEndpoint({ service, logger, maxBodyBytes: config.maxBodyBytes, supportedExtensions: SUPPORTED_EXTENSIONS, durableTasks: options.durableStore });
  router.add(["POST", "GET", "PUT", "DELETE", "PATCH"], JSONRPC_PATH, (req, res, _params, ctx) => jsonRpc(req, res, ctx));
  addV03RestRoutes(router, { service, logger, maxBodyBytes: config.maxBodyBytes });
  // A2A 1.0 HTTP+JSON (`/message:send`, `/{tenant}/tasks/{id}`...): its own router, chosen by A2A-Version where paths overlap.
  const routerV10 = createV10RestRouter({ service, logger, maxBodyBytes: config.maxBodyBytes, durableTasks: options.durableStore });
  addPushRoutes(router, { service });
  // The OpenWOP REST surface: runs (the same durable tasks A2A sees), events, interrupts, workflows.
  addOpenwopRunsRoutes(router, { runs, feed, interrupts: runInterrupts, logger, maxBodyBytes: config.maxBodyBytes });
  addOpenwopInterruptRoutes(router, { interrupts: runInterrupts, maxBodyBytes: config.maxBodyBytes });
  if (config.operator.console) {
    // The operator console lists across the tenants of the configured keys ("default" with auth off).
    const tenants = config.auth.mode === "apikey" ? [...new Set(config.auth.keys.map((k) => k.tenant))] : ["default"];
    addConsoleRoutes(router, {
      operations: new ConsoleOperations({ supervisor, reads: core.reads, hook: core.hook, feed, tokens: core.tokens, tenants }),
      push: new ConsolePush({ enabled: push.enabled, configs: core.pushConfigs, worker: push.worker }),
      logger,
      maxBodyBytes: config.maxBodyBytes,
      assetsDir: join(projectRoot, "src", "transport", "console", "assets"),
    });
  }
  if (config.conformanceSeams) {
    addConformanceSeamRoutes(router, { service, runs, checkPushUrl: (url, path) => push.configs.checkUrl(url, path), maxBodyBytes: config.maxBodyBytes });
  }
  addDiscoveryRoutes(router, {
    service,
    publicUrl: config.publicUrl,
    durableTasks: options.durableStore,
    version: packageVersion,
    transports: ["rest", "a2a", "grpc"],
    fixtures: CONFORMANCE_FIXTURES.filter((id) => catalog.get(id)),
    // Clarification interrupts work end to end (waiting-input, answers), which is what this envelope claims.
    supportedEnvelopes: ["clarification.request"],
  });

  const shutdown = new AbortController();
  // Connect, gRPC and gRPC-Web calls (/a2a.v1.TaskService/* for 0.3, /lf.a2a.v1.TaskService/* for 1.0) go to the
  // Connect adapter; everything else to the routers.
  const rpc = createA2AConnectHandler({ service, authenticator, logger, maxBodyBytes: config.maxBodyBytes, shutdownSignal: shutdown.signal, durableTasks: options.durableStore });
  const handle = async (req: HttpRequest, res: HttpResponse): Promise<void> => {
    // JSON-RPC echoes activated extensions itself (its error paths write their own headers).
    if (!req.url?.startsWith(JSONRPC_PATH)) {
      for (const [name, value] of Object.entries(activatedExtensions(req, SUPPORTED_EXTENSIONS))) res.setHeader(name, value);
    }
    if (isA2ARpcPath(req.url)) return rpc(req, res);
    const requestDone = new AbortController();
    res.on("close", () => requestDone.abort());
    const path = new URL(req.url ?? "/", "http://host").pathname;
    const match = matchA2ARoute(req, path, router, routerV10);
    try {
      const principal = PUBLIC_PATHS.some((p) => p.test(path)) ? PUBLIC_PRINCIPAL : authenticate(req, path, res);
      if (!principal) return;
      const ctx: CallContext = { principal, signal: AbortSignal.any([requestDone.signal, shutdown.signal]) };
      if (!match) throw new DomainError("not-found", `no route for ${req.method} ${path}`);
      if ("allowed" in match) {
        sendJson(res, 405, { error: "method_not_allowed", message: `${req.method} is not allowed on ${path}`, details: { allowed: match.allowed } }, { allow: match.allowed.join(", ") });
        return;
      }
      await match.handler(req, res, match.params, ctx);
    } catch (err) {
      if (!(err instanceof DomainError)) logger.error({ err, path }, "request failed");
      if (!res.headersSent) sendOpenwopError(res, err);
      else res.end();
    }
  };
  /** The caller's principal, or undefined after answering 401 in the format of the path's protocol. */
  function authenticate(req: HttpRequest, path: string, res: HttpResponse) {
    try {
      return authenticator.authenticate((name) => headerValue(req, name));
    } catch (err) {
      res.setHeader("www-authenticate", 'Bearer realm="openwop-a2a-host"');
      if (path === JSONRPC_PATH) sendJson(res, 401, jsonRpcError(null, err));
      else sendOpenwopError(res, err);
      return undefined;
    }
  }
  const server = new DualProtocolServer((req, res) => void handle(req, res));

  return {
    supervisor,
    service,
    push,
    async listen() {
      const address = await server.listen(config.port, config.host);
      await core.start();
      return address;
    },
    async close() {
      shutdown.abort();
      await server.close(config.shutdownGraceMs);
      await core.stop();
    },
  };
}

function headerValue(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
