import { resolve } from "node:path";
import { readAgentCardSettings, type AgentCardSettings } from "../a2a/agent-card-settings.js";
import { A2A_DRAFT_VERSIONS, type A2AVersion } from "../domain/a2a-version.js";
import { loadAuthSettings, type AuthSettings } from "../auth/auth-settings.js";
import { PROTOCOL_VERSION, type OpenwopVersions } from "../transport/openwop-version.js";
import { DEFAULT_MAX_INPUT_DEPTH, WIRE_MAX_DEPTH } from "../domain/json-input.js";
import { EnvReader, type Env } from "../domain/env-settings.js";
import { readConsoleSsoSettings, type ConsoleSsoSettings } from "../console/console-sso-settings.js";
import { readOperatorSettings, type OperatorSettings } from "../observability/operator-settings.js";
import { readInterruptTokenSettings, type InterruptTokenSettings } from "../interrupts/interrupt-settings.js";
import { readPeerSettings, type A2APeerSettings } from "../peer/peer-settings.js";
import { pushProductionProblems, readPushSettings, type PushSettings } from "../push/push-settings.js";
import { readSigningKeySettings, type SigningKeySettings } from "../secrets/signing-key-settings.js";
import { readStoreSettings, type StoreSettings } from "../store/store-settings.js";
import { readLeaseSettings, type LeaseSettings } from "../engine/lease-settings.js";
import { readRecoverySettings, type RecoverySettings } from "../engine/recovery-settings.js";
import { readWorkSettings, type WorkSettings } from "../engine/work-settings.js";
import { readHttpNodeSettings, type HttpNodeSettings } from "../engine/nodes/node-egress-settings.js";
import { readWorkflowSettings, type WorkflowSettings } from "../workflows/workflow-settings.js";
import { readConnectionSettings, type ConnectionSettings } from "../transport/connection-settings.js";
import { readTlsSettings, type TlsSettings } from "../transport/tls-settings.js";
import {
  readOverloadSettings,
  readTenantLimitSettings,
  type OverloadSettings,
  type TenantLimitSettings,
} from "../limits/limit-settings.js";

export { ConfigError } from "../domain/env-settings.js";

/** BLOCKING_FIRST_WRITE_MS's default: long enough for pure handlers that compute, short for one that waits on something. */
export const DEFAULT_BLOCKING_FIRST_WRITE_MS = 200;

/** Configuration from the environment, validated once at start. Every variable is in the README table. */
export interface Config extends StoreSettings, WorkflowSettings {
  env: "development" | "test" | "production";
  port: number;
  host: string;
  publicUrl: string;
  /** Whether PUBLIC_URL was given (else `publicUrl` is the local default): the start-up line names it beside the listening address then. */
  publicUrlSet: boolean;
  logLevel: string;
  dataDir: string;
  retentionMs: number;
  maxBodyBytes: number;
  /** Deepest nesting of objects and arrays accepted in a request body or a message's data and metadata. */
  maxInputDepth: number;
  blockingTimeoutMs: number;
  /** BLOCKING_FIRST_WRITE_MS: how long a blocking send's new task may run pure work before its first write. */
  blockingFirstWriteMs: number;
  subscriberBuffer: number;
  /** Log events a resumed subscription (Last-Event-ID) replays at most; further behind gets the Task snapshot. */
  streamResumeMaxEvents: number;
  timerPollMs: number;
  /** Task execution leases across instances: INSTANCE_ID, LEASE_TTL_MS, LEASE_HEARTBEAT_MS. */
  leases: LeaseSettings;
  /** Poison work: RECOVERY_MAX_ATTEMPTS. */
  recovery: RecoverySettings;
  /** Fair work on an instance: WORK_CONCURRENCY, WORK_TENANT_WEIGHTS. */
  work: WorkSettings;
  shutdownGraceMs: number;
  /** The listening port's connection timeouts and caps: HTTP_*_TIMEOUT_MS, HTTP2_SETTINGS_TIMEOUT_MS, MAX_CONNECTIONS*. */
  connections: ConnectionSettings;
  auth: AuthSettings;
  push: PushSettings;
  /** Calls to remote A2A agents (`a2a.invoke` nodes): A2A_PEER_* variables. */
  a2aPeer: A2APeerSettings;
  /** Calls to services (`http` nodes): HTTP_NODE_* variables, and WORKFLOW_VARIABLES (what definitions may reference). */
  httpNode: HttpNodeSettings;
  /** Signed interrupt tokens: configured keys (the first signs, all verify) and the lifetime of an issued token. */
  interruptTokens: InterruptTokenSettings;
  /** The host's asymmetric signing keys (SIGNING_KEYS): push JWTs, the card's signature, the JWKS. */
  signingKeys: SigningKeySettings;
  /** The host-sample conformance seams under /v1/host/sample/ (on by default in development and test). */
  conformanceSeams: boolean;
  /** OPENWOP_V1 (`served` through the OpenWOP 1/2 overlap; `retired` ends it) and OPENWOP_MIN_CLIENT_VERSION. */
  openwopVersions: OpenwopVersions;
  /** A2A_DRAFT_VERSIONS: draft A2A versions served beside the released ones (`1.1`); none by default. */
  a2aDraftVersions: A2AVersion[];
  /** A2A_LONG_POLL_MAX_MS: the longest a 1.1 GetTask with `currentGeneration` waits for the task to change. */
  a2aLongPollMaxMs: number;
  /** How long an Idempotency-Key record of POST /v1/runs is kept (at least 24 h). */
  idempotencyTtlMs: number;
  /** How long /readyz and grpc.health.v1 wait for the store's ping. */
  readinessTimeoutMs: number;
  /** The operator console (CONSOLE_ENABLED) and XState live inspection (XSTATE_INSPECT, XSTATE_INSPECT_FILE). */
  operator: OperatorSettings;
  /** The console's sign-in through the identity provider (CONSOLE_OIDC_*); absent = API keys only. */
  consoleSso?: ConsoleSsoSettings;
  /** What the bare agent-card path serves (AGENT_CARD_BARE), how long caches keep it (AGENT_CARD_MAX_AGE_SECONDS), the agent's identity (AGENT_*). */
  agentCard: AgentCardSettings;
  /** TLS and mutual TLS on the port (TLS_*); absent = cleartext. */
  tls: TlsSettings | undefined;
  /** TENANT_LIMITS (or TENANT_LIMITS_FILE): what each tenant and key may take; PUSH_MAX_CONFIGS_PER_TASK its default push cap. */
  limits: TenantLimitSettings;
  /** When new tasks are shed: OVERLOAD_EVENT_LOOP_DELAY_MS, OVERLOAD_STORE_LATENCY_MS. */
  overload: OverloadSettings;
}

/**
 * Composes the settings loaders of the modules (each reads its own variables) with the host's own variables.
 * Every problem of one start is reported at once: one ConfigError listing them all.
 */
export function loadConfig(env: Env = process.env): Config {
  const reader = new EnvReader(env);
  const nodeEnv = reader.oneOf("NODE_ENV", ["development", "test", "production"] as const, "development");
  const production = nodeEnv === "production";
  const port = reader.int("PORT", 8080, 0, 65535);
  const dataDirRaw = reader.raw("DATA_DIR") ?? "data";
  const auth = loadAuthSettings(env, production);
  if (Array.isArray(auth)) for (const problem of auth) reader.problem(problem);
  const tls = readTlsSettings(reader);
  const push = readPushSettings(reader);
  const config: Config = {
    env: nodeEnv,
    port,
    host: reader.raw("HOST") ?? "127.0.0.1",
    publicUrl: reader.url("PUBLIC_URL", `${tls ? "https" : "http"}://localhost:${port}`),
    publicUrlSet: reader.raw("PUBLIC_URL") !== undefined,
    logLevel: reader.oneOf(
      "LOG_LEVEL",
      ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const,
      "info",
    ),
    ...readStoreSettings(reader, production),
    // Relative to the working directory: an installed package keeps its data with the project that runs it.
    dataDir: resolve(dataDirRaw),
    // WORKFLOWS_DIR, BUILTIN_WORKFLOWS, DEFAULT_SKILL.
    ...readWorkflowSettings(reader),
    retentionMs: reader.int("TASK_RETENTION_HOURS", 24 * 7, 1) * 60 * 60 * 1000,
    maxBodyBytes: reader.int("MAX_BODY_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxInputDepth: reader.int("MAX_INPUT_DEPTH", DEFAULT_MAX_INPUT_DEPTH, 4, WIRE_MAX_DEPTH),
    blockingTimeoutMs: reader.int("BLOCKING_TIMEOUT_MS", 60_000, 0),
    blockingFirstWriteMs: reader.int("BLOCKING_FIRST_WRITE_MS", DEFAULT_BLOCKING_FIRST_WRITE_MS, 0, 10_000),
    subscriberBuffer: reader.int("SUBSCRIBER_BUFFER", 256, 1, 100_000),
    streamResumeMaxEvents: reader.int("STREAM_RESUME_MAX_EVENTS", 10_000, 0, 10_000_000),
    timerPollMs: reader.int("TIMER_POLL_MS", 1_000, 10, 60_000),
    leases: readLeaseSettings(reader),
    recovery: readRecoverySettings(reader),
    work: readWorkSettings(reader),
    shutdownGraceMs: reader.int("SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    connections: readConnectionSettings(reader),
    readinessTimeoutMs: reader.int("READINESS_TIMEOUT_MS", 1_000, 10, 60_000),
    interruptTokens: readInterruptTokenSettings(reader, production),
    signingKeys: readSigningKeySettings(reader, production),
    conformanceSeams: reader.bool("CONFORMANCE_SEAMS", !production),
    openwopVersions: readOpenwopVersions(reader),
    a2aDraftVersions: readDraftVersions(reader),
    a2aLongPollMaxMs: reader.int("A2A_LONG_POLL_MAX_MS", 30_000, 0, 600_000),
    idempotencyTtlMs: reader.int("IDEMPOTENCY_TTL_HOURS", 24, 24, 24 * 365) * 60 * 60 * 1000,
    auth: Array.isArray(auth) ? { mode: "on", keys: [] } : auth,
    push,
    a2aPeer: readPeerSettings(reader, production),
    httpNode: readHttpNodeSettings(reader, production),
    operator: readOperatorSettings(reader, production),
    agentCard: readAgentCardSettings(reader),
    tls,
    limits: readTenantLimitSettings(reader, push.maxConfigsPerTask),
    overload: readOverloadSettings(reader),
  };
  if (production) {
    if (reader.raw("PUBLIC_URL") === undefined)
      reader.problem("NODE_ENV=production needs PUBLIC_URL (the address callers use; it goes on the agent card)");
    for (const problem of pushProductionProblems(config.push)) reader.problem(problem);
  }
  const consoleSso = config.operator.console
    ? readConsoleSsoSettings(reader, config.auth.oidc, config.publicUrl)
    : undefined;
  if (consoleSso) config.consoleSso = consoleSso;
  reader.throwIfProblems();
  return config;
}

/** A2A_DRAFT_VERSIONS: a comma-separated list of the drafts this host can serve (A2A_DRAFT_VERSIONS in domain/a2a-version.ts). */
function readOpenwopVersions(reader: EnvReader): OpenwopVersions {
  const v1 = reader.oneOf("OPENWOP_V1", ["served", "retired"] as const, "served") === "served";
  const floor = reader.raw("OPENWOP_MIN_CLIENT_VERSION");
  if (floor === undefined) return { v1 };
  if (!PROTOCOL_VERSION.test(floor))
    reader.problem(`OPENWOP_MIN_CLIENT_VERSION must be <major>.<minor>, e.g. 2.0 (got "${floor}")`);
  return { v1, minClientVersion: floor };
}

function readDraftVersions(reader: EnvReader): A2AVersion[] {
  const drafts: A2AVersion[] = [];
  for (const entry of reader.list("A2A_DRAFT_VERSIONS")) {
    const draft = A2A_DRAFT_VERSIONS.find((d) => d === entry);
    if (draft) drafts.push(draft);
    else reader.problem(`A2A_DRAFT_VERSIONS may name ${A2A_DRAFT_VERSIONS.join(", ")} (got "${entry}")`);
  }
  return drafts;
}
