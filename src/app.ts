import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { TaskService } from "./a2a/task-service.js";
import type { CallContext } from "./auth/call-context.js";
import { buildAgentCard, type AgentInterface } from "./a2a/agent-card.js";
import type { Config } from "./config/config.js";
import { projectRoot } from "./config/project-root.js";
import { DomainError } from "./domain/errors.js";
import { builtinHandlers } from "./engine/builtin-handlers.js";
import { TaskSupervisor } from "./engine/task-supervisor.js";
import { apiKeyAuthenticator, devAuthenticator } from "./auth/api-key-authenticator.js";
import type { Principal } from "./auth/principal.js";
import { loadWorkflowCatalog } from "./engine/workflow-catalog.js";
import { A2AInvokeRunner } from "./engine/a2a-invoke-runner.js";
import { createA2APeerClient } from "./peer/a2a-peer-client.js";
import { createGrpcPeerTransport } from "./peer/grpc-peer-client.js";
import { createPeerHttpClient } from "./peer/peer-http-client.js";
import type { TaskHandler } from "./engine/workflow-types.js";
import type { Logger } from "./observability/logger.js";
import type { TaskStore } from "./store/task-store.js";
import { MemoryPushConfigStore } from "./store/memory-push-config-store.js";
import type { PushConfigStore } from "./store/push-config-store.js";
import type { Resolver } from "./push/push-egress-guard.js";
import { createPushNotifications, type PushNotifications } from "./push/push-notifications.js";
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
import { loadInterruptTokenKeys } from "./interrupts/interrupt-token-keys.js";
import { InterruptTokenSigner } from "./interrupts/interrupt-tokens.js";
import { RunEventFeed } from "./runs/run-event-feed.js";
import { interruptTokensFor, RunInterrupts } from "./runs/run-interrupts.js";
import { RunService } from "./runs/run-service.js";
import type { IdempotencyStore } from "./store/idempotency-store.js";
import { MemoryIdempotencyStore } from "./store/memory-idempotency-store.js";
import { addConformanceSeamRoutes } from "./transport/rest/conformance-seam-routes.js";
import { addOpenwopInterruptRoutes } from "./transport/rest/openwop-interrupt-routes.js";
import { addOpenwopRunsRoutes } from "./transport/rest/openwop-runs-routes.js";
import { sendOpenwopError } from "./transport/rest/openwop-errors.js";
import { Readiness } from "./observability/readiness.js";
import { noteRequest } from "./observability/request-notes.js";
import { createRequestObserver } from "./observability/request-observer.js";
import { createTelemetry, type Telemetry } from "./observability/telemetry.js";
import { observedHandlers, observedPeerHttp, observedPeerTransport, observedPushClient } from "./observed-egress.js";
import { observedPushConfigStore, observedTaskStore } from "./observed-store.js";
import { CountingTransitionHook, observeTasks } from "./observed-tasks.js";
import { createOpsConnectHandler, isOpsRpcPath, OPS_SERVICES } from "./transport/connect/ops-connect-handler.js";
import { addOpsRoutes } from "./transport/rest/ops-routes.js";
import { A2AService as V03Service } from "./gen/a2a/v1/a2a_pb.js";
import { A2AService as V10Service } from "./gen/lf/a2a/v1/a2a_pb.js";

export const JSONRPC_PATH = "/a2a/jsonrpc";
/** The OpenWOP extension our tasks carry (`metadata.openwop`: run status, interrupt carrier, error). */
export const OPENWOP_EXTENSION_URI = "https://openwop.dev/extensions/a2a-durable-tasks/v1";
const SUPPORTED_EXTENSIONS = [OPENWOP_EXTENSION_URI];

const packageVersion = (JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as { version: string }).version;

export interface AppOptions {
  config: Config;
  logger: Logger;
  store: TaskStore;
  durableStore: boolean;
  handlers?: Record<string, TaskHandler>;
  /** Push-config store (open it next to the task store); in-memory when not given. */
  pushConfigs?: PushConfigStore;
  /** Tests only: the DNS resolver of the push egress guard. */
  pushResolver?: Resolver;
  /** Idempotency-Key records of POST /v1/runs (open it next to the task store); in-memory when not given. */
  idempotency?: IdempotencyStore;
  /** Traces and metrics (main builds it from the OTEL_* variables); metrics only when not given. */
  telemetry?: Telemetry;
  /** How long /readyz and grpc.health.v1 wait for the store's ping (default 1 s). */
  readinessTimeoutMs?: number;
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
const PUBLIC_PATHS = [/^\/\.well-known\//, /^\/healthz$/, /^\/readyz$/, /^\/metrics$/, /^\/v1\/interrupts\//];
const PUBLIC_PRINCIPAL: Principal = { tenant: "", id: "public", scopes: [] };

/** `http://host[:port]` → `host:port`, the target form gRPC clients (grpc-js, a2a-js) expect. */
function grpcTarget(publicUrl: string): string {
  const url = new URL(publicUrl);
  return `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
}

export async function createApp(options: AppOptions): Promise<App> {
  const { config, logger } = options;
  const telemetry = options.telemetry ?? await createTelemetry({ version: packageVersion });
  const store = observedTaskStore(options.store, telemetry, logger);
  const handlers = observedHandlers({ ...builtinHandlers, ...options.handlers }, telemetry);
  const catalog = await loadWorkflowCatalog({
    builtinDir: join(projectRoot, "workflows"),
    ...(config.workflowsDir ? { extraDir: config.workflowsDir } : {}),
    handlers,
    defaultWorkflowId: config.defaultSkill,
    // `${A2A_PEER_CARD_URL}` in an a2a.invoke node's agentCardUrl (README "Workflows").
    variables: { A2A_PEER_CARD_URL: config.a2aPeer.cardUrl },
  });
  const hook = new CountingTransitionHook(logger);
  // a2a.invoke: outbound calls to remote A2A agents go through the same egress guard as push deliveries.
  // The card picks the wire: JSON-RPC 0.3 over undici, or gRPC (a2a.v1) over HTTP/2 when the card prefers it.
  const peerClient = createA2APeerClient({
    http: observedPeerHttp(createPeerHttpClient({ policy: config.a2aPeer.egress }), telemetry),
    grpc: observedPeerTransport(createGrpcPeerTransport({ policy: config.a2aPeer.egress, requestTimeoutMs: config.a2aPeer.requestTimeoutMs }), telemetry),
    requestTimeoutMs: config.a2aPeer.requestTimeoutMs,
  });
  const peerInvoker = new A2AInvokeRunner(peerClient, config.a2aPeer, logger);
  const supervisor = new TaskSupervisor({ store, catalog, handlers, hook, logger, retentionMs: config.retentionMs, timerPollMs: config.timerPollMs, peerInvoker });
  const stopObservingTasks = observeTasks({ hook, supervisor, telemetry, logger });
  const push = await createPushNotifications({
    settings: config.push,
    dataDir: config.dataDir,
    retentionMs: config.retentionMs,
    configs: observedPushConfigStore(options.pushConfigs ?? new MemoryPushConfigStore(), telemetry),
    decorateClient: (client) => observedPushClient(client, telemetry),
    supervisor,
    hook,
    logger,
    ...(options.pushResolver ? { resolve: options.pushResolver } : {}),
  });
  // JSON-RPC first (preferred). gRPC clients take a "host:port" target, not a URL; HTTP+JSON is under /v1.
  const interfaces: AgentInterface[] = [
    { url: `${config.publicUrl}${JSONRPC_PATH}`, transport: "JSONRPC" },
    { url: grpcTarget(config.publicUrl), transport: "GRPC" },
    { url: config.publicUrl, transport: "HTTP+JSON" },
  ];
  const card = buildAgentCard(catalog, {
    name: "OpenWOP A2A host",
    description: `Durable A2A tasks backed by OpenWOP workflow runs. Skills: ${catalog.ids().join(", ")}.`,
    version: packageVersion,
    interfaces,
    streaming: true,
    pushNotifications: push.enabled,
  });
  const authenticator = config.auth.mode === "apikey" ? apiKeyAuthenticator(config.auth.keys) : devAuthenticator;
  if (authenticator.enabled) {
    card.securitySchemes = { apiKey: { type: "http", scheme: "bearer", description: "An API key issued by the operator: Authorization: Bearer <key>" } };
    card.security = [{ apiKey: [] }];
  }
  card.capabilities.extensions = [{ uri: OPENWOP_EXTENSION_URI, description: "metadata.openwop on tasks and status updates: run status, interrupt kind and id, error code", required: false }];
  // Signed interrupt tokens: configured keys, or (development) a key generated once under DATA_DIR.
  const tokenKeys = await loadInterruptTokenKeys({ configured: config.interruptTokens.keys?.reveal(), dataDir: config.dataDir, production: config.env === "production" });
  const interruptTokens = new InterruptTokenSigner(tokenKeys.keys, { ttlMs: config.interruptTokens.ttlMs });
  const service = new TaskService({
    supervisor,
    hook,
    catalog,
    card,
    subscriberBuffer: config.subscriberBuffer,
    blockingTimeoutMs: config.blockingTimeoutMs,
    push: push.configs,
    interruptToken: (record, context, principal) => interruptTokensFor(interruptTokens, record, context, principal)?.resolve,
  });

  const router = new HttpRouter();
  const jsonRpc = createJsonRpcEndpoint({ service, logger, maxBodyBytes: config.maxBodyBytes, supportedExtensions: SUPPORTED_EXTENSIONS, durableTasks: options.durableStore });
  router.add(["POST", "GET", "PUT", "DELETE", "PATCH"], JSONRPC_PATH, (req, res, _params, ctx) => jsonRpc(req, res, ctx));
  addV03RestRoutes(router, { service, logger, maxBodyBytes: config.maxBodyBytes });
  // A2A 1.0 HTTP+JSON (`/message:send`, `/{tenant}/tasks/{id}`...): its own router, chosen by A2A-Version where paths overlap.
  const routerV10 = createV10RestRouter({ service, logger, maxBodyBytes: config.maxBodyBytes, durableTasks: options.durableStore });
  addPushRoutes(router, { service });
  // The OpenWOP REST surface: runs (the same durable tasks A2A sees), events, interrupts, workflows.
  const runs = new RunService({ supervisor, hook, catalog, idempotency: options.idempotency ?? new MemoryIdempotencyStore(), idempotencyTtlMs: config.idempotencyTtlMs, tokens: interruptTokens });
  const runInterrupts = new RunInterrupts({ supervisor, catalog, tokens: interruptTokens });
  const feed = new RunEventFeed({ supervisor, hook, maxBuffered: config.subscriberBuffer });
  addOpenwopRunsRoutes(router, { runs, feed, interrupts: runInterrupts, logger, maxBodyBytes: config.maxBodyBytes });
  addOpenwopInterruptRoutes(router, { interrupts: runInterrupts, maxBodyBytes: config.maxBodyBytes });
  if (config.conformanceSeams) {
    addConformanceSeamRoutes(router, { service, runs, egress: config.push.egress, ...(options.pushResolver ? { resolve: options.pushResolver } : {}), maxBodyBytes: config.maxBodyBytes });
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

  const readiness = new Readiness({ ping: () => store.ping?.() ?? Promise.resolve(), timeoutMs: options.readinessTimeoutMs ?? 1_000 });
  addOpsRoutes(router, { readiness, telemetry });

  const shutdown = new AbortController();
  // Connect, gRPC and gRPC-Web calls (/a2a.v1.TaskService/* for 0.3, /lf.a2a.v1.TaskService/* for 1.0) go to the
  // Connect adapter; everything else to the routers.
  const rpc = createA2AConnectHandler({ service, authenticator, logger, maxBodyBytes: config.maxBodyBytes, shutdownSignal: shutdown.signal, durableTasks: options.durableStore });
  const opsRpc = createOpsConnectHandler({ services: [V03Service, V10Service], ready: async () => (await readiness.check()).ready, shutdownSignal: shutdown.signal });
  const handle = async (req: HttpRequest, res: HttpResponse): Promise<void> => {
    // JSON-RPC echoes activated extensions itself (its error paths write their own headers).
    if (!req.url?.startsWith(JSONRPC_PATH)) {
      for (const [name, value] of Object.entries(activatedExtensions(req, SUPPORTED_EXTENSIONS))) res.setHeader(name, value);
    }
    if (isA2ARpcPath(req.url)) return rpc(req, res);
    if (isOpsRpcPath(req.url)) return opsRpc(req, res);
    const requestDone = new AbortController();
    res.on("close", () => requestDone.abort());
    const path = new URL(req.url ?? "/", "http://host").pathname;
    const match = matchA2ARoute(req, path, router, routerV10);
    try {
      const principal = PUBLIC_PATHS.some((p) => p.test(path)) ? PUBLIC_PRINCIPAL : authenticate(req, path, res);
      if (!principal) return;
      noteRequest({ tenant: principal.tenant, ...(match && "template" in match ? { method: `${req.method} ${match.template}` } : {}) });
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
  const rpcMethods = [V03Service, V10Service, ...OPS_SERVICES].flatMap((service) => service.methods.map((m) => `${service.typeName}/${m.name}`));
  const observe = createRequestObserver({ telemetry, logger, jsonRpcPath: JSONRPC_PATH, rpcMethods });
  const server = new DualProtocolServer((req, res) => observe(req, res, () => void handle(req, res)));

  return {
    supervisor,
    service,
    push,
    async listen() {
      const address = await server.listen(config.port, config.host);
      await supervisor.start();
      await push.start();
      return address;
    },
    async close() {
      readiness.drain();
      stopObservingTasks();
      shutdown.abort();
      await server.close(config.shutdownGraceMs);
      await supervisor.stop();
      await peerClient.close();
      await push.stop();
      if (!options.telemetry) await telemetry.shutdown();
    },
  };
}

function headerValue(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
