import type { A2AVersion } from "../domain/a2a-version.js";
/** AES-256-GCM ciphertext as stored: key id, 96-bit IV, 128-bit tag, ciphertext (all base64). */
export interface SealedSecrets {
  v: 1;
  kid: string;
  iv: string;
  tag: string;
  data: string;
}

/**
 * Where one push config's delivery stands. The task's event log is the outbox; this is the cursor into it.
 * It only moves forward, and only for the config revision that read it (see `updateDelivery`).
 */
export interface PushDelivery {
  /** Sequence of the last log event handled (delivered, not pushable, or dead-lettered); -1 = none yet. */
  cursor: number;
  /** `${state}|${interruptId}` of the last status the cursor passed, so only real transitions are pushed. */
  lastStatusKey: string | null;
  /** Failed attempts at the first pushable event after the cursor. */
  attempts: number;
  /** When the next attempt may run (after a failure); null = now. ISO 8601. */
  nextAttemptAt: string | null;
  /** What the last failed attempt said (no secrets: status code or error class). */
  lastError: string | null;
  /** The cursor passed a terminal status: nothing more will be pushed for this config. */
  settled: boolean;
}

/** A stored push config. `sealed` holds token and credentials encrypted; nothing else is secret. */
export interface PushConfigRecord {
  tenant: string;
  taskId: string;
  configId: string;
  url: string;
  /** `authentication.schemes` (not secret); the credentials are in `sealed`. */
  schemes: string[] | null;
  sealed: SealedSecrets | null;
  /** Salted digest of the token (A2ATaskState.pushConfig.tokenFingerprint). */
  tokenFingerprint: string | null;
  /** The A2A version the config was registered over: it picks the push body (absent = 0.3). */
  protocolVersion?: A2AVersion;
  createdAt: string;
  updatedAt: string;
  /** 1 on creation, bumped by every upsert. */
  revision: number;
  delivery: PushDelivery;
  /** Set once delivery is settled: the config is dropped after the task's retention. */
  expireAt: string | null;
  /** Which instance delivers the config's events now; absent until the first claim. */
  lease?: PushDeliveryLease;
}

/**
 * The delivery lease of one config (several instances on one database): one instance at a time reads the
 * log after the cursor and POSTs. `owner` and `expiresAt` are null once released; `epoch` only grows (each
 * claim bumps it), so a cursor move fenced with an older epoch is refused.
 */
export interface PushDeliveryLease {
  owner: string | null;
  epoch: number;
  expiresAt: string | null;
}

/** The lease a delivery holds, as its fenced writes name it. */
export interface PushLeaseFence {
  owner: string;
  epoch: number;
}

export interface PushConfigKey {
  taskId: string;
  configId: string;
}

/** What a registration writes; the store keeps `createdAt` and the delivery of an existing config. */
export type PushConfigWrite = Pick<
  PushConfigRecord,
  "tenant" | "taskId" | "configId" | "url" | "schemes" | "sealed" | "tokenFingerprint" | "updatedAt" | "protocolVersion"
>;

export type DeadLetterReason = "max-attempts" | "max-age" | "not-retryable";

/** A push given up on: kept for operators (GET /v1/push/dead-letters) until `expireAt`. */
export interface PushDeadLetter {
  id: string;
  tenant: string;
  taskId: string;
  configId: string;
  eventId: string;
  sequence: number;
  state: string;
  /** Scheme, host and port of the webhook; never its path or query (they may carry secrets). */
  target: string;
  reason: DeadLetterReason;
  attempts: number;
  lastError: string;
  eventAt: string;
  createdAt: string;
  expireAt: string;
}

export class TooManyPushConfigsError extends Error {
  override readonly name = "TooManyPushConfigsError";
  constructor(
    readonly taskId: string,
    readonly max: number,
  ) {
    super(`task ${taskId} already has ${max} push configs`);
  }
}

/** Delivery state of a config that starts at `cursor` (the task's version when it was registered, or -1). */
export function initialDelivery(cursor: number, lastStatusKey: string | null): PushDelivery {
  return { cursor, lastStatusKey, attempts: 0, nextAttemptAt: null, lastError: null, settled: false };
}

/** The push-config store port, with a memory and a MongoDB adapter sharing one contract test. */
export interface PushConfigStore {
  readonly kind: "memory" | "mongodb";
  init(): Promise<void>;
  /**
   * Creates the config (with `delivery`) or replaces an existing one's target and secrets (keeping its
   * delivery state and createdAt, bumping its revision). A new config beyond `maxPerTask` is refused
   * with TooManyPushConfigsError.
   */
  upsert(config: PushConfigWrite, delivery: PushDelivery, maxPerTask: number): Promise<PushConfigRecord>;
  get(taskId: string, configId: string): Promise<PushConfigRecord | null>;
  /** The task's configs, oldest first. */
  list(taskId: string): Promise<PushConfigRecord[]>;
  delete(taskId: string, configId: string): Promise<boolean>;
  deleteTask(taskId: string): Promise<number>;
  /**
   * Writes `delivery` (and `expireAt`) only if the config still has `expected.revision` and
   * `expected.cursor` and, when `expected.lease` is given, that delivery lease (owner and epoch); false when
   * it was replaced, deleted, moved by another delivery, or its lease was taken over. A settled delivery
   * releases the lease in the same write.
   */
  updateDelivery(
    taskId: string,
    configId: string,
    expected: { revision: number; cursor: number; lease?: PushLeaseFence },
    delivery: PushDelivery,
    expireAt: string | null,
  ): Promise<boolean>;
  /**
   * Takes the delivery lease of an unsettled config whose lease is free (never taken, released), expired at
   * `now`, or `owner`'s own (a restart with the same instance id): owner, epoch + 1, `expiresAt`. Answers the
   * config as it now stands (its cursor is where delivery continues), or null when another owner holds a
   * live lease, or the config is settled or gone.
   */
  claimDelivery(
    taskId: string,
    configId: string,
    owner: string,
    now: Date,
    expiresAt: Date,
  ): Promise<PushConfigRecord | null>;
  /** Extends the leases `owner` holds with these epochs; answers the ones it still holds. */
  renewDeliveries(
    owner: string,
    leases: Array<PushConfigKey & { epoch: number }>,
    expiresAt: Date,
  ): Promise<PushConfigKey[]>;
  /** Configs whose delivery lease expired without being given back: their holder died or froze (failover). */
  expiredDeliveryLeases(now: Date, limit: number): Promise<PushConfigKey[]>;
  /** Gives the lease back (owner and epoch must still match) so another instance may claim it at once. */
  releaseDelivery(taskId: string, configId: string, fence: PushLeaseFence): Promise<void>;
  /** Configs whose delivery is not settled, ordered by (taskId, configId), after the given key. */
  listUnsettled(after: { taskId: string; configId: string } | null, limit: number): Promise<PushConfigRecord[]>;
  addDeadLetter(letter: PushDeadLetter): Promise<void>;
  /** Newest first, one tenant. */
  listDeadLetters(tenant: string, filter: { taskId?: string; limit: number }): Promise<PushDeadLetter[]>;
  close(): Promise<void>;
}
