import type { AddressInfo } from "node:net";
import { createCore, packageVersion, type CoreOptions } from "./core.js";
import { OPENWOP_EXTENSION_URI } from "./a2a/openwop-extension.js";
import { hostInterfaces, JSONRPC_PATH } from "./transport/interface-urls.js";
import { createTelemetry, type Telemetry } from "./observability/telemetry.js";
import type { TaskService } from "./a2a/task-service.js";
import type { TaskSupervisor } from "./engine/task-supervisor.js";
import { bearerChallenges, type AuthDescription } from "./auth/authenticator.js";
import { hostAuthenticator } from "./auth/host-authenticator.js";
import { chargingAuthenticator, type TenantLimits } from "./limits/tenant-limits.js";
import { addConsoleLimitsRoutes } from "./console/console-limits.js";
import { certificateObserver, oidcObserver } from "./observed/observed-trust.js";
import { loadTlsServing, TlsFileWatcher } from "./transport/tls-files.js";
import { consoleStreamCounter } from "./observed/observed-console.js";
import { observeReadiness } from "./observed/observed-readiness.js";
import type { Principal } from "./auth/principal.js";
import type { PushNotifications } from "./push/push-notifications.js";
import { addPushRoutes } from "./transport/rest/push-routes.js";
import { addNodeKindRoutes, publicNodeKindPaths } from "./transport/rest/node-kind-routes.js";
import { createA2AConnectHandler, isA2ARpcPath } from "./transport/connect/a2a-connect-handler.js";
import { isRpcRequest } from "./transport/connect/rpc-unknown-method.js";
import { connectionMetrics, DualProtocolServer } from "./transport/http-server.js";
import { HttpRouter } from "./transport/http-router.js";
import {
  bindVersions,
  signedCardVersions,
  versionModule,
  versionModules,
  versionOfRpcService,
} from "./a2a/versions.js";
import { UNNAMED_A2A_VERSION } from "./domain/a2a-version.js";
import { Readiness } from "./observability/readiness.js";
import { createRequestObserver } from "./observability/request-observer.js";
import { observedInvocations } from "./observed/observed-invocations.js";
import { createOpsConnectHandler, isOpsRpcPath, OPS_SERVICES } from "./transport/connect/ops-connect-handler.js";
import { addOpsRoutes } from "./transport/rest/ops-routes.js";
import { errorReporter } from "./transport/errors/wire-error.js";
import { createA2ARestRouters } from "./transport/rest/a2a-rest-router.js";
import { createRequestDispatch } from "./transport/request-dispatch.js";
import { createJsonRpcEndpoint, createJsonRpcRefusal } from "./transport/jsonrpc/jsonrpc-endpoint.js";
import { addJwksRoute, JWKS_PATH } from "./transport/rest/jwks-route.js";
import { signCardDocument } from "./a2a/agent-card-signature.js";
import { addDiscoveryRoutes, CONFORMANCE_FIXTURES } from "./transport/rest/discovery-routes.js";
import { addConformanceSeamRoutes } from "./transport/rest/conformance-seam-routes.js";
import { addHostEventRoutes } from "./transport/rest/host-event-routes.js";
import { addOpenwopInterruptRoutes } from "./transport/rest/openwop-interrupt-routes.js";
import { addOpenwopRunsRoutes } from "./transport/rest/openwop-runs-routes.js";
import { addHostSteeringRoutes } from "./transport/rest/host-steering-routes.js";
import { addOpenwopV2Routes } from "./transport/rest/openwop-v2-routes.js";
import { authLanes } from "./auth/auth-lanes.js";
import { authProfiles } from "./auth/auth-profiles.js";
import { protectedResource } from "./auth/protected-resource.js";
import { addOpenApiRoute } from "./transport/openapi/openapi-route.js";
import { exportTaskMachine } from "./machine/machine-export.js";
import { recoveryEvidence } from "./engine/recovery-settings.js";
import { ConsolePush } from "./console/console-push.js";
import { ConsoleOperations } from "./console/console-operations.js";
import { ConsoleAccess } from "./console/console-access.js";
import { CONSOLE_PUBLIC_PATH } from "./console/console-assets.js";
import { addConsoleRoutes } from "./console/console-routes.js";
import { addConsoleSignInRoutes, CONSOLE_AUTH_PATH, consoleSessionGate } from "./console/console-sign-in.js";
import { ConsoleSessions } from "./console/console-sessions.js";
import { ConsoleIdp } from "./console/console-idp.js";
import { ShutdownSteps } from "./shutdown-deadline.js";

export { JSONRPC_PATH, OPENWOP_EXTENSION_URI };
const SUPPORTED_EXTENSIONS = [OPENWOP_EXTENSION_URI];

/** Core's options less what the app supplies itself: the interfaces it serves, the ways in, and (when not given) telemetry. */
export interface AppOptions extends Omit<CoreOptions, "telemetry" | "interfaces" | "auth"> {
  /** Traces and metrics; when not given the app makes a metrics-only one and shuts it down on close (else its creator does). */
  telemetry?: Telemetry;
  durableStore: boolean;
  /** The in-memory fallback's warning (store/memory-fallback.ts), shown on /readyz. */
  storeWarning?: string[];
}

export interface App {
  supervisor: TaskSupervisor;
  service: TaskService;
  /** Push notifications: the registration service, the delivery worker (when enabled), a start-up phrase. */
  push: PushNotifications;
  /** The agent's name on its card, and the skills (workflow ids) it serves: for the start-up line. */
  agentName: string;
  skills: string[];
  /** The ways in, as the authenticators describe them: for the start-up line. */
  auth: AuthDescription;
  /** Tenant limits (TENANT_LIMITS) and overload shedding. */
  limits: TenantLimits;
  /** Starts listening and resumes every unfinished task. */
  listen(): Promise<AddressInfo>;
  /**
   * Graceful shutdown: ends streams, drains requests, stops the supervisor. The store stays open. `steps`
   * records which part is under way (the CLI's shutdown deadline names it).
   */
  close(steps?: ShutdownSteps): Promise<void>;
  /** Every HTTP route (OpenWOP, discovery, operator, A2A HTTP+JSON per version): what /v1/openapi.json is checked against. */
  routes(): Array<{ binding: string; template: string; methods: string[] }>;
}

/**
 * Paths without an API key: discovery, health, and signed interrupt tokens (the token is the credential).
 * Their handlers see a principal that belongs to no tenant and holds no scope.
 */
const PUBLIC_PATHS = [
  /^\/\.well-known\//,
  /^\/healthz$/,
  /^\/readyz$/,
  /^\/metrics$/,
  /^\/v1\/interrupts\//,
  // Only a token-shaped segment (`<payload>.<mac>`): a tenant-prefixed A2A 1.0 path of a tenant named
  // "interrupts" (`/interrupts/extendedAgentCard`) must still need credentials.
  /^\/interrupts\/[\w-]+\.[\w-]+$/,
  CONSOLE_PUBLIC_PATH,
  CONSOLE_AUTH_PATH,
];
const PUBLIC_PRINCIPAL: Principal = { tenant: "", id: "public", scopes: [] };

/** The host over HTTP. Telemetry: whoever creates it shuts it down, once, on every path (here: only one made here). */
export async function createApp(options: AppOptions): Promise<App> {
  if (options.telemetry) return assembleApp(options, options.telemetry, false);
  const telemetry = await createTelemetry({ version: packageVersion });
  try {
    return await assembleApp(options, telemetry, true);
  } catch (err) {
    await telemetry.shutdown();
    throw err;
  }
}

async function assembleApp(options: AppOptions, telemetry: Telemetry, ownsTelemetry: boolean): Promise<App> {
  const { config, logger } = options;
  // TLS_CERT_FILE / TLS_KEY_FILE: the one port speaks TLS; read first, so unusable files stop the start before
  // anything runs. The files are re-read for rotation (tls-files.ts).
  const tls = config.tls ? loadTlsServing(config.tls) : undefined;
  // Mutual TLS (TLS_CLIENT_PRINCIPALS): verified client certificates mapped to principals, tried first; mapped
  // certificates alone turn authentication on. What only the operator can fix (a token's lifetime, an issuer's
  // TLS, an unmapped certificate) is logged.
  const authenticator = hostAuthenticator(config.auth, config.tls?.clientPrincipals ?? [], {
    oidc: oidcObserver(logger, telemetry),
    certificates: certificateObserver(logger),
  });
  // The card (built once, in core) declares exactly the configured ways in (API keys, OIDC, client certificates)
  // and the interfaces served here.
  const auth = authenticator.describe();
  // With OIDC issuers: RFC 9728 metadata at its well-known path, named by every HTTP binding's challenges.
  const resource = protectedResource(config.auth, config.publicUrl);
  const challenges = bearerChallenges(resource?.url);
  const core = await createCore({ ...options, telemetry, interfaces: hostInterfaces(config.publicUrl), auth });
  const { catalog, supervisor, push, card, runs, runInterrupts, feed } = core;
  // Every binding's calls are charged to their caller's request rate (TENANT_LIMITS) as they are authenticated.
  const admitting = chargingAuthenticator(authenticator, core.limits.limits);
  // Under the GenAI opt-in, a message sent to the agent (any binding, any version) is noted as an agent invocation.
  const service = observedInvocations(core.service, core.telemetry, ["send", "sendMessage", "streamMessage"]);

  const router = new HttpRouter();
  // What every JSON surface bounds: body size and nesting depth.
  const inputLimits = { maxBodyBytes: config.maxBodyBytes, maxInputDepth: config.maxInputDepth };
  // Each A2A version's operations, bound once; the JSON-RPC endpoint, HTTP+JSON routers and Connect handler read them.
  const versions = bindVersions({ service, durableTasks: options.durableStore, logger }, config.a2aDraftVersions);
  const report = errorReporter(logger);
  const jsonRpc = createJsonRpcEndpoint({
    versions,
    report,
    ...inputLimits,
    supportedExtensions: SUPPORTED_EXTENSIONS,
    challenges,
  });
  const a2aRest = createA2ARestRouters({ versions, report, ...inputLimits });
  addPushRoutes(router, { service });
  // The node kinds' routes (a2a.invoke: peers' pushes, whose per-task token is the credential; docs/security.md).
  addNodeKindRoutes(router, { routes: core.nodeRoutes, maxBodyBytes: config.maxBodyBytes });
  // The OpenWOP REST surface: runs (the same durable tasks A2A sees), events, interrupts, workflows.
  // OpenWOP 1 on /v1 through the overlap (OPENWOP_V1=served), OpenWOP 2 on the unversioned paths (docs/openwop.md).
  const openwopVersions = config.openwopVersions;
  if (openwopVersions.v1) {
    addOpenwopRunsRoutes(router, { runs, feed, interrupts: runInterrupts, report, ...inputLimits });
    addOpenwopInterruptRoutes(router, { interrupts: runInterrupts, ...inputLimits });
  }
  // The host's own steering operations (retry, restart from a node) under /host/openwop-a2a-host.
  addHostSteeringRoutes(router, { runs, ...inputLimits });
  // The host's own event log (negotiation.decided of the calls it receives).
  addHostEventRoutes(router, { negotiations: core.negotiations });
  addOpenwopV2Routes(router, {
    runs,
    feed,
    interrupts: runInterrupts,
    versions: openwopVersions,
    report,
    ...inputLimits,
  });
  // The console's sign-in (docs/security.md "Console sign-in"): sessions in this instance's memory, each holding
  // an access token the host's authenticator checks on every call, as any API caller's.
  let sessionGate: ReturnType<typeof consoleSessionGate> | undefined;
  const consoleStreams = consoleStreamCounter(core.telemetry.metrics);
  if (config.operator.console) {
    const sessions = new ConsoleSessions();
    const signIn = {
      sessions,
      publicUrl: config.publicUrl,
      secureCookies: config.tls !== undefined || config.publicUrl.startsWith("https:"),
    };
    addConsoleSignInRoutes(router, {
      ...signIn,
      authenticator,
      ...(config.consoleSso
        ? { idp: new ConsoleIdp(config.consoleSso, { observer: oidcObserver(logger, telemetry) }) }
        : {}),
    });
    if (config.consoleSso) sessionGate = consoleSessionGate(signIn);
    // The operator console is tenant-scoped like every other surface: a key sees its own tenant; one with
    // console:all-tenants sees every tenant of the configured keys ("default" with auth off).
    const access = ConsoleAccess.fromAuth(auth);
    addConsoleRoutes(router, {
      operations: new ConsoleOperations({
        supervisor,
        reads: core.reads,
        commits: consoleStreams.counted(core.commits),
        feed,
        tokens: core.tokens,
        access,
        catalog,
        interrupts: runInterrupts,
        storeTimeoutMs: config.storeTimeoutMs,
      }),
      push: new ConsolePush({
        enabled: push.enabled,
        configs: core.pushConfigs,
        worker: push.worker,
        access,
        storeTimeoutMs: config.storeTimeoutMs,
      }),
      report,
      ...inputLimits,
    });
    addConsoleLimitsRoutes(router, {
      limits: core.limits.limits,
      shedding: () => core.limits.overload.shedding,
      access,
    });
  }
  if (config.conformanceSeams) {
    // The invoke seam is the node kind's that calls peers (its runner, over the host's own peer client and egress guard).
    const { invokePeer } = core.nodeSeams;
    addConformanceSeamRoutes(router, {
      service,
      runs,
      checkPushUrl: (url, path) => push.configs.checkUrl(url, path),
      ...(invokePeer ? { invokePeer } : {}),
      ...inputLimits,
    });
  }
  // The signed cards (A2A AgentCardSignature, `jku` = our JWKS) of the versions whose module signs, made once: the card is final from here on.
  const jku = `${config.publicUrl}${JWKS_PATH}`;
  const signedCards = Object.fromEntries(
    await Promise.all(
      signedCardVersions(config.a2aDraftVersions).map(
        async (v) =>
          [
            v,
            await signCardDocument(versionModule(v).card.document(card) as Record<string, unknown>, (payload) =>
              core.signingKeys.signDetached(payload, { jku }),
            ),
          ] as const,
      ),
    ),
  );
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
    cardSettings: config.agentCard,
    signedCards,
    recoveryEvidence: recoveryEvidence(config.leases, config.recovery),
    openwop: { versions: openwopVersions, lanes: authLanes(config.auth, config.publicUrl) },
    authProfiles: authProfiles(
      config.auth,
      config.tls && { clientAuth: config.tls.clientAuth, principals: config.tls.clientPrincipals },
    ),
    ...(resource ? { protectedResource: resource } : {}),
    signingKeys: core.evidenceKey ? [core.evidenceKey.listing()] : [],
  });
  // Five minutes: an added key reaches receivers' caches well before it signs (docs/security.md "Signing keys").
  addJwksRoute(router, { jwks: () => core.signingKeys.jwks(), maxAgeSeconds: 300 });
  const readiness = new Readiness({
    ping: () => options.store.ping?.() ?? Promise.resolve(),
    timeoutMs: config.readinessTimeoutMs,
    leaseProblem: () => core.supervisor.leaseProblem(),
    shedding: () => core.limits.overload.shedding,
    details: {
      store: options.store.kind,
      durable: options.durableStore,
      ...(options.storeWarning ? { warning: options.storeWarning } : {}),
    },
  });
  observeReadiness(readiness, core.telemetry.metrics);
  addOpsRoutes(router, { readiness, telemetry: core.telemetry });
  addOpenApiRoute(router, { publicUrl: config.publicUrl, version: packageVersion, auth, versions: openwopVersions });

  const shutdown = new AbortController();
  // Connect, gRPC and gRPC-Web calls (/a2a.v1.A2AService/* for 0.3, /lf.a2a.v1.A2AService/* for 1.0) go to the
  // Connect adapter (which authenticates in its interceptor); everything else is authenticated, then routed.
  const rpc = createA2AConnectHandler({
    versions,
    authenticator: admitting,
    report,
    maxBodyBytes: config.maxBodyBytes,
    maxInputDepth: config.maxInputDepth,
    shutdownSignal: shutdown.signal,
  });
  // grpc.health.v1 and server reflection (public, like /healthz): same port, their own Connect router.
  const rpcServices = versionModules().map((m) => m.connectService);
  const opsRpc = createOpsConnectHandler({
    services: rpcServices,
    ready: async () => (await readiness.check()).ready,
    shutdownSignal: shutdown.signal,
  });
  const handle = createRequestDispatch({
    jsonRpcPath: JSONRPC_PATH,
    jsonRpc,
    jsonRpcRefused: createJsonRpcRefusal({
      report,
      maxBodyBytes: config.maxBodyBytes,
      supportedExtensions: SUPPORTED_EXTENSIONS,
    }),
    a2aRest,
    openwop: router,
    // Any other gRPC, gRPC-Web or Connect call goes there too, to be answered UNIMPLEMENTED in its protocol.
    rpc: {
      handles: (req) => isA2ARpcPath(req.url) || isOpsRpcPath(req.url) || isRpcRequest(req),
      handle: (req, res) => (isOpsRpcPath(req.url) ? opsRpc(req, res) : rpc(req, res)),
    },
    authenticator: admitting,
    challenges,
    publicPaths: [...PUBLIC_PATHS, ...publicNodeKindPaths(core.nodeRoutes)],
    openwopVersions,
    publicPrincipal: PUBLIC_PRINCIPAL,
    supportedExtensions: SUPPORTED_EXTENSIONS,
    report,
    shutdownSignal: shutdown.signal,
  });
  const rpcMethods = [...rpcServices, ...OPS_SERVICES].flatMap((service) =>
    service.methods.map((m) => `${service.typeName}/${m.name}`),
  );
  const observe = createRequestObserver({
    telemetry: core.telemetry,
    logger,
    jsonRpcPath: JSONRPC_PATH,
    rpcMethods,
    versions: { ofRpcService: versionOfRpcService, unnamed: UNNAMED_A2A_VERSION },
    negotiations: (decision, caller) => core.negotiations.record(decision, caller),
    agent: {
      name: card.name,
      id: `${config.publicUrl.replace(/\/$/, "")}/.well-known/agent-card.json`,
      version: card.version,
    },
  });
  const server = new DualProtocolServer(
    (req, res) => observe(req, res, () => void (sessionGate && !sessionGate(req, res) ? undefined : handle(req, res))),
    config.connections,
    connectionMetrics(core.telemetry.metrics, logger),
    tls,
  );
  const tlsWatcher =
    config.tls && tls
      ? new TlsFileWatcher(
          config.tls,
          tls,
          (context) => {
            server.setSecureContext(context);
            logger.info("TLS certificate, key or client CA files changed: new connections use them");
          },
          (err) =>
            logger.warn({ err }, "TLS files could not be reloaded; new connections keep the previous certificate"),
        )
      : undefined;
  // SIGHUP re-reads the TLS files at once (rotation without waiting for TLS_RELOAD_INTERVAL_MS).
  const onHangup = (): void => void tlsWatcher?.check();
  if (tlsWatcher) process.on("SIGHUP", onHangup);
  core.telemetry.metrics.observe("connections", (report) => report(server.openConnections));
  core.telemetry.metrics.observe("pushBacklog", (report) => report(push.worker?.backlog() ?? 0));

  return {
    supervisor,
    service,
    push,
    agentName: card.name,
    skills: catalog.ids(),
    auth,
    limits: core.limits.limits,
    async listen() {
      const address = await server.listen(config.port, config.host);
      await core.start();
      return address;
    },
    routes() {
      return [
        ...router.list().map((r) => ({ binding: "openwop", ...r })),
        ...[...a2aRest].flatMap(([version, r]) =>
          r.list().map((route) => ({ binding: `a2a-rest ${version}`, ...route })),
        ),
      ];
    },
    async close(steps = new ShutdownSteps()) {
      readiness.drain();
      shutdown.abort();
      tlsWatcher?.stop();
      process.off("SIGHUP", onHangup);
      await steps.run("draining requests", () => server.close(config.shutdownGraceMs));
      await steps.run("stopping task work (leases, pushes, peers)", () => core.stop());
      if (ownsTelemetry) await telemetry.shutdown();
    },
  };
}
