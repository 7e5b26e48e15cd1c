import { join } from "node:path";
import { buildAgentCard, type AgentCard, type AgentInterface } from "./a2a/agent-card.js";
import { OPENWOP_EXTENSION } from "./a2a/openwop-extension.js";
import type { AuthDescription } from "./auth/authenticator.js";
import { TaskService } from "./a2a/task-service.js";
import type { Config } from "./config/config.js";
import { packageVersion } from "./domain/package-version.js";
import { projectRoot } from "./domain/project-root.js";
import type { NodeRoute, NodeSeams } from "./engine/nodes/node-kind.js";
import { withPluginKinds, type NodeKindRegistry, type NodeServicesByKind } from "./engine/nodes/node-registry.js";
import type { AnyNodeKind } from "./engine/nodes/plugin-node-kind.js";
import { ConfigError } from "./domain/env-settings.js";
import { nodeEgress } from "./observed/node-egress.js";
import type { SigningKeyRing } from "./secrets/signing-key-ring.js";
import type { EvidenceKey } from "./secrets/evidence-key.js";
import { loadHostKeys } from "./host-keys.js";
import { CommitBus } from "./store/commit-bus.js";
import { builtinHandlers } from "./workflows/builtin-handlers.js";
import { StatelessSkills } from "./engine/stateless-skill.js";
import { TaskObserver } from "./engine/task-observer.js";
import { TaskSupervisor } from "./engine/task-supervisor.js";
import { loadWorkflowCatalog, type WorkflowCatalog } from "./engine/workflow-catalog.js";
import type { DeployContext } from "./engine/definition-needs.js";
import { WorkflowVersions } from "./engine/workflow-versions.js";
import { reportLiveVersions } from "./engine/live-versions-report.js";
import { MemoryWorkflowVersionStore } from "./store/workflow-version-store.js";
import type { NodeBase, TaskHandler, WorkflowDefinition } from "./workflows/workflow-types.js";
import { builtinWorkflowSets } from "./workflows/workflow-settings.js";
import type { InterruptTokenSigner } from "./interrupts/interrupt-tokens.js";
import { configureTaskInspection } from "./machine/task-inspection.js";
import { createInspectionSink } from "./observability/inspection-sink.js";
import type { Logger } from "./observability/logger.js";
import type { Telemetry } from "./observability/telemetry.js";
import {
  observedEgressHttp,
  observedHandlers,
  observedPeerTransport,
  observedPushClient,
} from "./observed/observed-egress.js";
import { peerTlsFailureReporter } from "./observed/observed-trust.js";
import { observedPushConfigStore, observedTaskStore } from "./observed/observed-store.js";
import { observedPeerClient } from "./observed/observed-peer-client.js";
import { nodeServicesAsTools } from "./observed/observed-tools.js";
import { CountingTransitionHook, observeTasks } from "./observed/observed-tasks.js";
import { workQueueDelayRecorder } from "./observed/observed-work.js";
import { createHostLimits, type HostLimits } from "./limits/host-limits.js";
import type { TransitionHook } from "./engine/transition-hook.js";
import { createA2APeerClient } from "./peer/a2a-peer-client.js";
import { createGrpcPeerTransport } from "./peer/grpc-peer-client.js";
import { createPeerHttpClient } from "./peer/peer-http-client.js";
import { egressFetch } from "./egress/egress-fetch.js";
import { PEER_JWKS_TIMEOUT_MS, PeerJwks } from "./peer/peer-jwks.js";
import { workflowVariableValues } from "./engine/nodes/node-egress-settings.js";
import { negotiateA2AVersion } from "./domain/a2a-version.js";
import { peerVersions, pushBody, servedVersions } from "./a2a/versions.js";
import type { Resolver } from "./egress/egress-guard.js";
import { createPushNotifications, type PushNotifications } from "./push/push-notifications.js";
import { RunEventFeed } from "./runs/run-event-feed.js";
import { interruptTokensFor, RunInterrupts } from "./runs/run-interrupts.js";
import { RunService } from "./runs/run-service.js";
import type { IdempotencyStore } from "./store/idempotency-store.js";
import { MemoryIdempotencyStore } from "./store/memory-idempotency-store.js";
import { MemoryHostEventStore, type HostEventStore } from "./store/host-event-store.js";
import { NegotiationLog } from "./a2a/negotiation-log.js";
import { MemoryPushConfigStore } from "./store/memory-push-config-store.js";
import type { PushConfigStore } from "./store/push-config-store.js";
import type { TaskReadPort } from "./store/task-read-port.js";
import { CappedTaskReads } from "./store/capped-task-reads.js";
import type { TaskStore } from "./store/task-store.js";
import { DEFAULT_TASK_SIZE_LIMITS } from "./store/task-size-limits.js";

export { packageVersion };

export interface CoreOptions {
  config: Config;
  logger: Logger;
  /** Traces and metrics. Whoever creates it shuts it down (startHost, createApp when not given one, the tests' helpers): core only uses it. */
  telemetry: Telemetry;
  /** How callers reach this host, preferred first (transport/interface-urls.ts): the card's interfaces. Core knows no HTTP path. */
  interfaces: AgentInterface[];
  /** The ways in as the authenticator describes them (auth/authenticator.ts): the card's security schemes. None: no authentication. */
  auth?: Pick<AuthDescription, "enabled" | "schemes" | "requirements">;
  store: TaskStore;
  handlers?: Record<string, TaskHandler>;
  /** Workflow definitions given as objects (`startHost({ workflows })`), validated exactly like files; they count as the user's own (see BUILTIN_WORKFLOWS). */
  workflows?: WorkflowDefinition<NodeBase>[];
  /** The catalog, when the caller loaded it already (`startHost` checks the workflows before opening the store); else loaded here. */
  catalog?: WorkflowCatalog;
  /** Push-config store (open it next to the task store); in-memory when not given. */
  pushConfigs?: PushConfigStore;
  /** Tests only: the DNS resolver of the push egress guard. */
  pushResolver?: Resolver;
  /** Idempotency-Key records of POST /v1/runs (open it next to the task store); in-memory when not given. */
  idempotency?: IdempotencyStore;
  /** The host's own event log (open it next to the task store); in-memory when not given. */
  hostEvents?: HostEventStore;
  /** Plugin node kinds (public-node-kind.ts), when the catalog is loaded here (startHost checks its own before). */
  nodeKinds?: readonly AnyNodeKind[];
}

/** The host without HTTP: the engine and the services every binding calls. */
export interface Core {
  catalog: WorkflowCatalog;
  /** Where the supervisor publishes this instance's commits; listen on `commits`. */
  hook: TransitionHook;
  /** Commits as they happen, this instance's and other instances' (the observer, push and node kinds listen here). */
  commits: CommitBus;
  supervisor: TaskSupervisor;
  reads: TaskReadPort;
  observer: TaskObserver;
  service: TaskService;
  runs: RunService;
  runInterrupts: RunInterrupts;
  feed: RunEventFeed;
  /** `negotiation.decided` of the calls this host receives, on the host event log. */
  negotiations: NegotiationLog;
  /** Push notifications: the registration service, the delivery worker (when enabled), a start-up phrase. */
  push: PushNotifications;
  card: AgentCard;
  telemetry: Telemetry;
  /** The host's signing keys: push JWTs, the card's signature, the JWKS at /.well-known/jwks.json. */
  signingKeys: SigningKeyRing;
  /** The Ed25519 key of evidence bundles, listed in discovery `signingKeys[]`; none in production without EVIDENCE_SIGNING_KEY. */
  evidenceKey: EvidenceKey | undefined;
  /** Signs and checks interrupt tokens (REST interrupts API, console). */
  tokens: InterruptTokenSigner;
  /** The push-config store (the console shows deliveries and dead letters). */
  pushConfigs: PushConfigStore;
  /** The node kinds' HTTP routes (e.g. the receiver of peers' pushes, POST /v1/peer-callbacks/{taskId}, when there is a callback key). */
  nodeRoutes: NodeRoute[];
  /** Each node kind's services, by kind (what its createServices built). */
  nodeServices: NodeServicesByKind;
  /** Tenant limits (TENANT_LIMITS) and overload shedding: the app charges each call's request rate to them. */
  limits: HostLimits;
  /** The conformance seams the node kinds serve (the invoke seam: the kind that calls peers, over the host's peer client). */
  nodeSeams: NodeSeams;
  /** Resumes every unfinished task and starts push delivery. */
  start(): Promise<void>;
  /** Stops the engine, peer clients, push and the commit feed; the store and the telemetry stay open (their owners close them). */
  stop(): Promise<void>;
}

/**
 * Our built-in sets (BUILTIN_WORKFLOWS; by default the demos, and none once the user brings workflows of their
 * own), then the user's: WORKFLOWS_DIR and the definitions given as objects. Every problem in one WorkflowLoadError.
 */
export function loadCatalog(
  config: Config,
  handlers: Record<string, TaskHandler>,
  workflows?: WorkflowDefinition<NodeBase>[],
  kinds?: NodeKindRegistry,
): Promise<WorkflowCatalog> {
  return loadWorkflowCatalog({
    ...(kinds ? { kinds } : {}),
    builtinDir: join(projectRoot, "workflows"),
    builtin: builtinWorkflowSets(config, workflows?.length ?? 0),
    ...(config.workflowsDir ? { extraDir: config.workflowsDir } : {}),
    ...(workflows ? { workflows } : {}),
    ...(config.defaultSkill !== undefined ? { defaultWorkflowId: config.defaultSkill } : {}),
    // `${A2A_PEER_CARD_URL}` in an a2a.invoke node's agentCardUrl (README "Workflows"); named peers (A2A_PEERS): a
    // node naming another one stops the start.
    ...deployContext(config, handlers),
    // A node URL the egress guard will refuse stops the start, naming the setting that would allow it.
    egress: { http: config.httpNode.egress, peer: config.a2aPeer.egress },
  });
}

/** What this deploy brings that definitions need besides node kinds: handlers, `${NAME}` variables, named peers. */
export function deployContext(config: Config, handlers: Record<string, TaskHandler>): Omit<DeployContext, "kinds"> {
  return {
    handlers: { ...builtinHandlers, ...handlers },
    variables: { A2A_PEER_CARD_URL: config.a2aPeer.cardUrl, ...workflowVariableValues(config.httpNode) },
    peers: Object.fromEntries([...config.a2aPeer.peers.values()].map((p) => [p.name, p.cardUrl ?? p.url ?? ""])),
  };
}

/** The registry with the plugin kinds `kinds`; a problem with one of them is a ConfigError. */
function pluginRegistry(kinds: readonly AnyNodeKind[]): NodeKindRegistry {
  const { registry, problems } = withPluginKinds(kinds, "nodeKinds");
  if (problems.length > 0) throw new ConfigError(problems);
  return registry;
}

/**
 * Built in phases, each from what the ones before made: (1) keys and the commit bus; (2) the outbound clients,
 * node kinds' services and the engine, each complete at construction; (3) push; (4) the card, once; (5) the
 * services the bindings call. HTTP is not known here: the caller hands in the interfaces and the ways in.
 */
export async function createCore(options: CoreOptions): Promise<Core> {
  const { config, logger, telemetry } = options;
  const store = observedTaskStore(options.store, telemetry, logger);
  const handlers = observedHandlers({ ...builtinHandlers, ...options.handlers }, telemetry);
  const catalog =
    options.catalog ??
    (await loadCatalog(config, handlers, options.workflows, pluginRegistry(options.nodeKinds ?? [])));
  // Every definition served is stored before it is served; each run walks the version it started on (docs/workflows.md).
  const versions = new WorkflowVersions({
    catalog,
    store: store.workflowVersions ?? new MemoryWorkflowVersionStore(),
    deploy: deployContext(config, options.handlers ?? {}),
  });
  await versions.register();
  await reportLiveVersions(versions, logger);
  // XSTATE_INSPECT: XState's inspection API on the actors of the chosen tasks (README "Live inspection").
  const { inspectTasks, inspectSink } = config.operator;
  configureTaskInspection(
    inspectTasks ? { taskIds: inspectTasks, sink: createInspectionSink(inspectSink) } : undefined,
  );

  // (1) Keys first (host-keys.ts): a missing one stops the start before anything runs. Then the commit bus: this
  // instance's commits (the hook) and other instances' (MongoDB: a change stream on the task heads, or polling).
  const keys = await loadHostKeys(config, logger);
  const hook = new CountingTransitionHook(logger);
  const commitFeed = await store.openCommitFeed?.(config.commitFeed, (err) =>
    logger.warn({ err }, "the commit feed failed; restarting it from its resume token"),
  );
  const commits = new CommitBus(hook, commitFeed);

  // (2) Outbound clients. Calls to remote A2A agents (peers) go through the same egress guard as push deliveries.
  // The card (or a named peer's pins) picks the wire: JSON-RPC or HTTP+JSON over the egress client, gRPC over HTTP/2, A2A 1.0 or 0.3.
  // A private CA of peers' servers (A2A_PEERS_CA_FILE) is trusted by both wires; a failed handshake is logged once and counted.
  const peerTls = {
    ...(config.a2aPeer.ca !== undefined ? { ca: config.a2aPeer.ca } : {}),
    onTlsFailure: peerTlsFailureReporter(logger, telemetry),
  };
  const peerHttp = observedEgressHttp(
    createPeerHttpClient({ policy: config.a2aPeer.egress, ...peerTls }),
    telemetry,
    "peer",
  );
  // Peers' JWKS (card signatures, signed pushes) come through the same client and policy: one key set per URL.
  const peerJwks = new PeerJwks(egressFetch(peerHttp, PEER_JWKS_TIMEOUT_MS));
  const peerClient = observedPeerClient(
    createA2APeerClient({
      http: peerHttp,
      jwks: peerJwks,
      grpc: observedPeerTransport(
        createGrpcPeerTransport({
          policy: config.a2aPeer.egress,
          versions: peerVersions(),
          requestTimeoutMs: config.a2aPeer.requestTimeoutMs,
          streamIdleMs: config.a2aPeer.streamIdleMs,
          ...peerTls,
        }),
        telemetry,
      ),
      versions: peerVersions(),
      requestTimeoutMs: config.a2aPeer.requestTimeoutMs,
      streamIdleMs: config.a2aPeer.streamIdleMs,
      peers: config.a2aPeer.peers,
    }),
    telemetry,
  );
  // Nodes' own calls (the http kind, plugin kinds): clients made on demand through the egress guard, with the node policy (HTTP_NODE_*).
  const egress = nodeEgress(config.httpNode, telemetry);
  // Only an https callback is offered (a plain-http one only under the test-only loopback allowance): a peer must never be sent to its own localhost.
  const callbackKey = keys.peerCallback;
  const callbackBase = config.a2aPeer.callbackUrl ?? config.publicUrl;
  const callbackOk = callbackBase.startsWith("https://") || config.a2aPeer.egress.allowHttpLoopback;
  // Each node kind builds its services, complete, from the same generic pieces (engine/nodes/*: createServices;
  // nothing here names a kind); the supervisor (made next) is reached through the handles, called only once tasks run.
  const nodeServices = nodeServicesAsTools(
    catalog.kinds.createServices({
      logger,
      clock: () => new Date(),
      reads: {
        find: (taskId) => supervisor.reads.find(taskId),
        contextOf: (record) => supervisor.reads.contextOf(record),
      },
      progress: { commitNodeProgress: (taskId, decide) => supervisor.commitNodeProgress(taskId, decide) },
      commits,
      handlers,
      variables: { A2A_PEER_CARD_URL: config.a2aPeer.cardUrl, ...workflowVariableValues(config.httpNode) },
      peers: {
        client: peerClient,
        settings: config.a2aPeer,
        versions: peerVersions(),
        jwks: peerJwks,
        ...(callbackKey ? { callbackKey } : {}),
        ...(callbackKey && callbackOk ? { callbackBaseUrl: callbackBase } : {}),
      },
      egress,
    }),
    telemetry,
  );
  // Tenant limits and overload shedding: they admit creations, streams and push configs, and count in the store.
  const limits = createHostLimits({
    settings: config.limits,
    overload: config.overload,
    ...(store.tenantUsage ? { store: store.tenantUsage } : {}),
    ping: () => store.ping?.() ?? Promise.resolve(),
    instanceId: config.leases.instanceId,
    heartbeatMs: config.leases.heartbeatMs,
    ttlMs: config.leases.ttlMs,
    telemetry,
    logger,
  });
  const supervisor: TaskSupervisor = new TaskSupervisor({
    store,
    catalog,
    versions,
    services: nodeServices.services,
    hook,
    logger,
    retentionMs: config.retentionMs,
    timerPollMs: config.timerPollMs,
    leases: config.leases,
    recovery: config.recovery,
    work: config.work,
    workAdmitted: workQueueDelayRecorder(telemetry, config.work.tenantWeights),
    admission: limits.limits,
  });
  const stopObservingTasks = observeTasks({ commits, hook, supervisor, telemetry, logger });
  const reads = supervisor.reads;
  const observer = new TaskObserver({ reads, commits, maxBuffered: config.subscriberBuffer });

  // (3) Push: its keys from phase 1, woken by the commit bus.
  const pushConfigs = observedPushConfigStore(options.pushConfigs ?? new MemoryPushConfigStore(), telemetry);
  const push = await createPushNotifications({
    settings: config.push,
    keys: keys.push,
    signingKeys: keys.signingKeys,
    publicUrl: config.publicUrl,
    retentionMs: config.retentionMs,
    configs: pushConfigs,
    decorateClient: (client) => observedPushClient(client, telemetry),
    tasks: reads,
    log: reads,
    commits,
    leases: config.leases,
    tenantWeights: config.work.tenantWeights,
    limitOf: (principal) => {
      const bound = limits.limits.pushConfigsPerTask(principal);
      return (
        bound && { max: bound.value, refused: (taskId) => limits.limits.pushConfigsRefused(principal, taskId, bound) }
      );
    },
    // A config keeps the A2A version it was registered over; its deliveries are that version's push body.
    bodies: (version) => pushBody(negotiateA2AVersion(version)),
    logger,
    ...(options.pushResolver ? { resolve: options.pushResolver } : {}),
  });

  // (4) The card, once and whole: the interfaces and ways in the caller serves, the OpenWOP extension, and the
  // agent's identity (AGENT_*; unset fields keep the host's own name, a description naming the skills, the package version).
  const identity = config.agentCard.identity;
  const card = buildAgentCard(catalog, {
    name: identity.name ?? "OpenWOP A2A host",
    description:
      identity.description ?? `Durable A2A tasks backed by OpenWOP workflow runs. Skills: ${catalog.ids().join(", ")}.`,
    version: identity.version ?? packageVersion,
    ...(identity.provider ? { provider: identity.provider } : {}),
    ...(identity.documentationUrl ? { documentationUrl: identity.documentationUrl } : {}),
    ...(identity.iconUrl ? { iconUrl: identity.iconUrl } : {}),
    interfaces: options.interfaces,
    // A2A_DRAFT_VERSIONS: the drafts' interfaces beside the released ones.
    protocolVersions: servedVersions(config.a2aDraftVersions),
    streaming: true,
    pushNotifications: push.enabled,
    extensions: [OPENWOP_EXTENSION],
    ...(options.auth?.enabled
      ? { security: { schemes: options.auth.schemes, requirements: options.auth.requirements } }
      : {}),
  });

  // (5) The services every binding calls.
  const { tokens, signingKeys } = keys;
  const service = new TaskService({
    supervisor,
    reads,
    observer,
    catalog,
    card,
    blockingTimeoutMs: config.blockingTimeoutMs,
    firstWriteWindowMs: config.blockingFirstWriteMs,
    storeTimeoutMs: config.storeTimeoutMs,
    resumeMaxEvents: config.streamResumeMaxEvents,
    longPollMaxMs: config.a2aLongPollMaxMs,
    sizeLimits: store.limits ?? DEFAULT_TASK_SIZE_LIMITS,
    maxInputDepth: config.maxInputDepth,
    push: push.configs,
    interruptToken: (record, context, principal) => interruptTokensFor(tokens, record, context, principal)?.resolve,
    stateless: new StatelessSkills({ handlers, logger, reads, kinds: catalog.kinds }),
    streamGate: limits.limits,
  });
  // The OpenWOP runs API: the same durable tasks A2A sees, their events and interrupts.
  const runs = new RunService({
    supervisor,
    reads,
    observer,
    catalog,
    idempotency: options.idempotency ?? new MemoryIdempotencyStore(),
    idempotencyTtlMs: config.idempotencyTtlMs,
    tokens,
    storeTimeoutMs: config.storeTimeoutMs,
  });
  // Their reads are bounded by STORE_TIMEOUT_MS (these routes carry no caller deadline).
  const cappedReads = new CappedTaskReads(reads, config.storeTimeoutMs);
  const runInterrupts = new RunInterrupts({ supervisor, reads: cappedReads, catalog, tokens });
  const feed = new RunEventFeed({ reads: cappedReads, observer, streamGate: limits.limits });
  const negotiations = new NegotiationLog({
    store: options.hostEvents ?? new MemoryHostEventStore(),
    metrics: telemetry.metrics,
    logger,
  });
  return {
    catalog,
    hook,
    commits,
    supervisor,
    reads,
    observer,
    service,
    runs,
    runInterrupts,
    feed,
    negotiations,
    push,
    card,
    tokens,
    signingKeys,
    evidenceKey: keys.evidence,
    pushConfigs,
    telemetry,
    nodeRoutes: catalog.kinds.routes(nodeServices.services),
    nodeServices: nodeServices.services,
    limits,
    nodeSeams: catalog.kinds.seams(nodeServices.services),
    async start() {
      await supervisor.start();
      versions.startRetention(config.retentionMs, logger);
      await push.start();
      limits.start();
    },
    async stop() {
      limits.stop();
      stopObservingTasks();
      versions.stopRetention();
      await supervisor.stop();
      await nodeServices.close();
      await peerClient.close();
      await egress.close();
      await push.stop();
      await commits.close();
      await negotiations.close();
    },
  };
}
