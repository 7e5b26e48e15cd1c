import type { Resolver } from "../egress/egress-guard.js";
import type { Logger } from "../observability/logger.js";
import type { PushConfigStore } from "../store/push-config-store.js";
import { PushConfigService, type PushConfigServiceOptions } from "./push-config-service.js";
import { PushDeliveryWorker } from "./push-delivery-worker.js";
import { createPushHttpClient, type PushHttpClient } from "./push-http-client.js";
import type { SigningKeyRing } from "../secrets/signing-key-ring.js";
import { PushJwtSigner } from "./push-jwt.js";
import type { PushKeys } from "./push-keys.js";
import type { PushLeaseSettings } from "./push-delivery-leases.js";
import type { PushBodyEncoders, PushCommits, PushTaskLog, PushTaskReader } from "./push-ports.js";
import { PushSecretBox } from "./push-secrets.js";
import type { PushSettings } from "./push-settings.js";

export interface PushNotificationsOptions {
  settings: PushSettings;
  /** The push keys (push-keys.ts: configured, or generated once under DATA_DIR), loaded with the host's other keys; none when push is disabled. */
  keys: PushKeys | undefined;
  /** The host's signing key ring (push JWTs) and its public URL (their `iss`). */
  signingKeys: SigningKeyRing;
  publicUrl: string;
  /** Task retention: settled configs and dead letters are kept as long. */
  retentionMs: number;
  configs: PushConfigStore;
  /** Callers' tasks, tenant-checked (registration and reads). */
  tasks: PushTaskReader;
  /** The committed task log the worker delivers from. */
  log: PushTaskLog;
  /** Commits that wake delivery: this instance's, and other instances' when the feed pushes them (a change stream). */
  commits: PushCommits;
  /** This instance's id and the lease timing: each config's delivery is leased to one instance at a time. */
  leases: PushLeaseSettings;
  bodies: PushBodyEncoders;
  logger: Logger;
  /** Tests only: a resolver for the egress guard (registration and delivery). */
  resolve?: Resolver;
  /** Each tenant's weight in the round robin for delivery slots (WORK_TENANT_WEIGHTS). */
  tenantWeights?: Readonly<Record<string, number>>;
  /** Wraps the webhook client (telemetry: spans, traceparent, delivery metrics). */
  decorateClient?: (client: PushHttpClient) => PushHttpClient;
  /** Each caller's push-config cap (TENANT_LIMITS pushConfigsPerTask); without it, PUSH_MAX_CONFIGS_PER_TASK for all. */
  limitOf?: PushConfigServiceOptions["limitOf"];
}

export interface PushNotifications {
  enabled: boolean;
  configs: PushConfigService;
  worker: PushDeliveryWorker | undefined;
  /** One phrase for the start-up line (never a key). */
  description: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Composition of push: the secret box over its keys, the registration service and the delivery worker. With push disabled only the service exists, and it
 * answers push-not-supported.
 */
export async function createPushNotifications(options: PushNotificationsOptions): Promise<PushNotifications> {
  const { settings, configs, tasks, logger } = options;
  const keys = options.keys;
  if (!settings.enabled || !keys) {
    const service = new PushConfigService({
      enabled: false,
      configs,
      tasks,
      egress: settings.egress,
      ...(options.resolve ? { resolve: options.resolve } : {}),
      maxConfigsPerTask: settings.maxConfigsPerTask,
      ...(options.limitOf ? { limitOf: options.limitOf } : {}),
    });
    return {
      enabled: false,
      configs: service,
      worker: undefined,
      description: "push: disabled",
      start: async () => {},
      stop: async () => {},
    };
  }
  const secrets = new PushSecretBox(keys.encryptionKey, keys.previousEncryptionKeys);
  const created = createPushHttpClient({
    policy: settings.egress,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  const client = options.decorateClient ? options.decorateClient(created) : created;
  const worker = new PushDeliveryWorker({
    tasks: options.log,
    configs,
    commits: options.commits,
    leases: options.leases,
    bodies: options.bodies,
    client,
    secrets,
    signingKey: keys.signingKey,
    jwt: new PushJwtSigner(options.signingKeys, options.publicUrl),
    logger,
    transitions: settings.transitions,
    retry: {
      baseMs: settings.retryBaseMs,
      maxMs: settings.retryMaxMs,
      maxAttempts: settings.maxAttempts,
      maxAgeMs: settings.maxAgeMs,
    },
    timeoutMs: settings.timeoutMs,
    concurrency: settings.concurrency,
    ...(options.tenantWeights ? { tenantWeights: options.tenantWeights } : {}),
    breaker: { threshold: settings.breakerThreshold, cooldownMs: settings.breakerCooldownMs },
    sweepIntervalMs: settings.sweepIntervalMs,
    retentionMs: options.retentionMs,
  });
  const service = new PushConfigService({
    enabled: true,
    configs,
    tasks,
    secrets,
    egress: settings.egress,
    ...(options.resolve ? { resolve: options.resolve } : {}),
    maxConfigsPerTask: settings.maxConfigsPerTask,
    ...(options.limitOf ? { limitOf: options.limitOf } : {}),
    onRegistered: (taskId) => void worker.wakeTask(taskId),
    onStored: (taskId) => worker.watchTask(taskId),
  });
  const loopback = settings.egress.allowHttpLoopback ? ", TEST-ONLY http/loopback targets allowed" : "";
  return {
    enabled: true,
    configs: service,
    worker,
    description: `push: on (keys from ${keys.source}, ${settings.transitions} transitions${loopback})`,
    async start() {
      const { pending } = await worker.start();
      if (pending > 0)
        logger.info({ pending }, "push: resuming delivery for configs with pending or unconfirmed pushes");
    },
    stop: () => worker.stop(),
  };
}
