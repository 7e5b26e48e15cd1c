import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { TaskService } from "./a2a/task-service.js";
import { buildAgentCard, type AgentInterface } from "./a2a/agent-card.js";
import type { Config } from "./config/config.js";
import { projectRoot } from "./config/project-root.js";
import { invalidParams } from "./domain/errors.js";
import { builtinHandlers } from "./engine/builtin-handlers.js";
import { TaskSupervisor } from "./engine/task-supervisor.js";
import { apiKeyAuthenticator, devAuthenticator } from "./auth/api-key-authenticator.js";
import type { Principal } from "./auth/principal.js";
import { TransitionHook } from "./engine/transition-hook.js";
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
import { checkPushUrl, checkPushUrlSyntax, EgressRefusedError, EgressResolutionError, type EgressPolicy, type Resolver } from "./push/push-egress-guard.js";
import { exportTaskMachine } from "./machine/machine-export.js";
import { createPushNotifications, type PushNotifications } from "./push/push-notifications.js";
import { addPushRoutes } from "./transport/rest/push-routes.js";
import { createA2AConnectHandler, isA2ARpcPath } from "./transport/connect/a2a-connect-handler.js";
import { DualProtocolServer } from "./transport/http-server.js";
import { HttpRouter } from "./transport/http-router.js";
import { bindVersions } from "./a2a/versions.js";
import { errorReporter } from "./transport/errors/wire-error.js";
import { createA2ARestRouters } from "./transport/rest/a2a-rest-router.js";
import { createRequestDispatch } from "./transport/request-dispatch.js";
import { createJsonRpcEndpoint } from "./transport/jsonrpc/jsonrpc-endpoint.js";
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
const PUBLIC_PATHS = [/^\/\.well-known\//, /^\/healthz$/, /^\/v1\/interrupts\//];
const PUBLIC_PRINCIPAL: Principal = { tenant: "", id: "public", scopes: [] };

/** `http://host[:port]` → `host:port`, the target form gRPC clients (grpc-js, a2a-js) expect. */
function grpcTarget(publicUrl: string): string {
  const url = new URL(publicUrl);
  return `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
}

export async function createApp(options: AppOptions): Promise<App> {
  const { config, logger, store } = options;
  const handlers = { ...builtinHandlers, ...options.handlers };
  const catalog = await loadWorkflowCatalog({
    builtinDir: join(projectRoot, "workflows"),
    ...(config.workflowsDir ? { extraDir: config.workflowsDir } : {}),
    handlers,
    defaultWorkflowId: config.defaultSkill,
    // `${A2A_PEER_CARD_URL}` in an a2a.invoke node's agentCardUrl (README "Workflows").
    variables: { A2A_PEER_CARD_URL: config.a2aPeer.cardUrl },
  });
  const hook = new TransitionHook(logger);
  // a2a.invoke: outbound calls to remote A2A agents go through the same egress guard as push deliveries.
  // The card picks the wire: JSON-RPC 0.3 over undici, or gRPC (a2a.v1) over HTTP/2 when the card prefers it.
  const peerClient = createA2APeerClient({
    http: createPeerHttpClient({ policy: config.a2aPeer.egress }),
    grpc: createGrpcPeerTransport({ policy: config.a2aPeer.egress, requestTimeoutMs: config.a2aPeer.requestTimeoutMs }),
    requestTimeoutMs: config.a2aPeer.requestTimeoutMs,
  });
  const peerInvoker = new A2AInvokeRunner(peerClient, config.a2aPeer, logger);
  const supervisor = new TaskSupervisor({ store, catalog, handlers, hook, logger, retentionMs: config.retentionMs, timerPollMs: config.timerPollMs, peerInvoker });
  const push = await createPushNotifications({
    settings: config.push,
    dataDir: config.dataDir,
    retentionMs: config.retentionMs,
    configs: options.pushConfigs ?? new MemoryPushConfigStore(),
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
  // Each A2A version's operations, bound once; the JSON-RPC endpoint, HTTP+JSON routers and Connect handler read them.
  const versions = bindVersions({ service, durableTasks: options.durableStore });
  const report = errorReporter(logger);
  const jsonRpc = createJsonRpcEndpoint({ versions, report, maxBodyBytes: config.maxBodyBytes, supportedExtensions: SUPPORTED_EXTENSIONS });
  const a2aRest = createA2ARestRouters({ versions, report, maxBodyBytes: config.maxBodyBytes });
  addPushRoutes(router, { service });
  // The OpenWOP REST surface: runs (the same durable tasks A2A sees), events, interrupts, workflows.
  const runs = new RunService({ supervisor, hook, catalog, idempotency: options.idempotency ?? new MemoryIdempotencyStore(), idempotencyTtlMs: config.idempotencyTtlMs, tokens: interruptTokens });
  const runInterrupts = new RunInterrupts({ supervisor, catalog, tokens: interruptTokens });
  const feed = new RunEventFeed({ supervisor, hook, maxBuffered: config.subscriberBuffer });
  addOpenwopRunsRoutes(router, { runs, feed, interrupts: runInterrupts, report, maxBodyBytes: config.maxBodyBytes });
  addOpenwopInterruptRoutes(router, { interrupts: runInterrupts, maxBodyBytes: config.maxBodyBytes });
  if (config.conformanceSeams) {
    const checkSeamPushUrl = (url: string) => checkPushUrlForSeam(url, config.push.egress, options.pushResolver);
    addConformanceSeamRoutes(router, { service, runs, checkPushUrl: checkSeamPushUrl, maxBodyBytes: config.maxBodyBytes });
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
    taskMachine: exportTaskMachine,
  });

  const shutdown = new AbortController();
  // Connect, gRPC and gRPC-Web calls (/a2a.v1.A2AService/* for 0.3, /lf.a2a.v1.A2AService/* for 1.0) go to the
  // Connect adapter (which authenticates in its interceptor); everything else is authenticated, then routed.
  const rpc = createA2AConnectHandler({ versions, authenticator, report, maxBodyBytes: config.maxBodyBytes, shutdownSignal: shutdown.signal });
  const handle = createRequestDispatch({
    jsonRpcPath: JSONRPC_PATH,
    jsonRpc,
    a2aRest,
    openwop: router,
    rpc: { handles: isA2ARpcPath, handle: rpc },
    authenticator,
    publicPaths: PUBLIC_PATHS,
    publicPrincipal: PUBLIC_PRINCIPAL,
    supportedExtensions: SUPPORTED_EXTENSIONS,
    report,
    shutdownSignal: shutdown.signal,
  });
  const server = new DualProtocolServer((req, res) => void handle(req, res));

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
      shutdown.abort();
      await server.close(config.shutdownGraceMs);
      await supervisor.stop();
      await peerClient.close();
      await push.stop();
    },
  };
}

/** The egress guard's verdict on a seam's push URL, as the invalid-params the seam answers. */
async function checkPushUrlForSeam(url: string, egress: EgressPolicy, resolve: Resolver | undefined): Promise<void> {
  try {
    checkPushUrlSyntax(url, egress);
    await checkPushUrl(url, egress, resolve);
  } catch (err) {
    if (err instanceof EgressRefusedError) throw invalidParams(err.message, { path: "body.url", arm: err.arm });
    if (err instanceof EgressResolutionError) throw invalidParams(`push URL refused: ${err.message}`, { path: "body.url", arm: "address" });
    throw err;
  }
}
