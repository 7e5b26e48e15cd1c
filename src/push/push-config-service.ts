import { randomUUID } from "node:crypto";
import { UNNAMED_A2A_VERSION } from "../domain/a2a-version.js";
import type { A2ATaskState, PushNotificationConfig, TaskPushNotificationConfig } from "../domain/a2a-types.js";
import { DomainError, invalidParams } from "../domain/errors.js";
import type { Principal } from "../auth/principal.js";
import {
  initialDelivery,
  TooManyPushConfigsError,
  type PushConfigRecord,
  type PushConfigStore,
  type PushDeadLetter,
} from "../store/push-config-store.js";
import type { TaskRecord } from "../domain/task-record.js";
import {
  checkEgressUrl,
  checkEgressUrlSyntax,
  EgressRefusedError,
  EgressResolutionError,
  type EgressPolicy,
  type Resolver,
} from "../egress/egress-guard.js";
import type { PushTaskReader } from "./push-ports.js";
import { secretsAad, type PushSecretBox, type PushSecrets } from "./push-secrets.js";

export interface PushConfigServiceOptions {
  /** false: every operation answers push-not-supported (and the card says pushNotifications: false). */
  enabled: boolean;
  configs: PushConfigStore;
  tasks: PushTaskReader;
  /** Required when enabled. */
  secrets?: PushSecretBox;
  egress: EgressPolicy;
  resolve?: Resolver;
  maxConfigsPerTask: number;
  /**
   * The push-config cap that binds a caller (TENANT_LIMITS pushConfigsPerTask, whose default is
   * PUSH_MAX_CONFIGS_PER_TASK) and its refusal; without it every caller has `maxConfigsPerTask`.
   */
  limitOf?: (principal: Principal) => PushConfigLimit | undefined;
  /** Called after a registration, so an update committed meanwhile is not left for the sweep. */
  onRegistered?: (taskId: string) => void;
  /** Called once a config of `taskId` is stored (also before its task exists): the worker then watches the task's commits. */
  onStored?: (taskId: string) => void;
  clock?: () => Date;
}

/** A caller's cap on one task's push configs, and how a config past it is refused (429 with its limit named). */
export interface PushConfigLimit {
  max: number;
  refused(taskId: string): Error;
}

const MAX_SECRET_LENGTH = 4096;
// eslint-disable-next-line no-control-regex -- control characters are exactly what it refuses
const CONFIG_ID = /^[^\s/\\\u0000-\u001f\u007f]{1,128}$/u;
/** RFC 9110 token (an auth-scheme). */
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
/** What can travel in an HTTP header value: visible ASCII and inner spaces. */
const HEADER_SAFE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Push-config registration and reads: validation (the URL first, before any task lookup), tenant checks
 * through the task reader, secrets sealed before they are stored. The A2A service delegates here; the
 * delivery worker reads the same store.
 */
export class PushConfigService {
  private readonly clock: () => Date;

  constructor(private readonly options: PushConfigServiceOptions) {
    this.clock = options.clock ?? (() => new Date());
    if (options.enabled && !options.secrets) throw new Error("push is enabled but has no secret box");
  }

  get enabled(): boolean {
    return this.options.enabled;
  }

  assertEnabled(): void {
    if (!this.options.enabled) {
      throw new DomainError(
        "push-not-supported",
        "Push Notification is not supported by this agent (push notifications are disabled by configuration; capabilities.pushNotifications is false)",
      );
    }
  }

  /**
   * Everything that can be checked without the task: the config's fields and the egress guard on its URL
   * (syntax, then DNS). Runs before any task lookup, so an unsafe URL is refused even for an unknown task.
   */
  async validate(config: PushNotificationConfig, path: string): Promise<void> {
    this.assertEnabled();
    await this.checkUrl(config.url, `${path}.url`);
    if (config.id !== undefined && !CONFIG_ID.test(config.id)) {
      throw invalidParams(`${path}.id must be 1 to 128 characters without whitespace, control characters or slashes`, {
        path: `${path}.id`,
      });
    }
    if (config.token !== undefined) checkSecret(config.token, `${path}.token`);
    const auth = config.authentication;
    if (auth) {
      const scheme = auth.schemes[0];
      if (scheme === undefined)
        throw invalidParams(`${path}.authentication.schemes must not be empty`, {
          path: `${path}.authentication.schemes`,
        });
      if (!auth.schemes.every((s) => HTTP_TOKEN.test(s)))
        throw invalidParams(`${path}.authentication.schemes must be HTTP auth-scheme names (e.g. "Bearer")`, {
          path: `${path}.authentication.schemes`,
        });
      if (auth.credentials !== undefined) checkSecret(auth.credentials, `${path}.authentication.credentials`);
    }
  }

  /** The egress guard on a push URL (syntax, then DNS); a refusal is invalid params naming the arm at `path`. */
  async checkUrl(url: string, path: string): Promise<void> {
    try {
      checkEgressUrlSyntax(url, this.options.egress, "push");
      await checkEgressUrl(url, this.options.egress, "push", this.options.resolve);
    } catch (err) {
      if (err instanceof EgressRefusedError) throw invalidParams(err.message, { path, arm: err.arm });
      if (err instanceof EgressResolutionError)
        throw invalidParams(`push URL refused: ${err.message}`, { path, arm: "address" });
      throw err;
    }
  }

  /**
   * `tasks/pushNotificationConfig/set`: an upsert by config id. Without an id, the task id when the task has no
   * config by that id yet (as the SDKs default it, so `get` without an id finds it), else a freshly minted one:
   * a config created without an id never replaces another (OpenWOP RFC 0214); the answer names the id it got.
   */
  async set(
    taskId: string,
    config: PushNotificationConfig,
    principal: Principal,
    path = "params.pushNotificationConfig",
  ): Promise<TaskPushNotificationConfig> {
    await this.validate(config, path);
    const task = await this.options.tasks.get(taskId, principal.tenant);
    return this.registerValidated(task, config, principal);
  }

  /**
   * An inline `configuration.pushNotificationConfig` for a task about to be created with this id: stored
   * (already validated) BEFORE the task exists, with its cursor before the first event, so the very first
   * transition is covered even across a crash. `discard` undoes it if the creation fails.
   */
  async registerForNewTask(taskId: string, principal: Principal, config: PushNotificationConfig): Promise<void> {
    await this.store({ taskId, tenant: principal.tenant }, config, -1, null, principal);
  }

  /** An inline config on a message to an existing task (already validated; the caller looked the task up). */
  async registerForExistingTask(task: TaskRecord, config: PushNotificationConfig, principal: Principal): Promise<void> {
    await this.registerValidated(task, config, principal);
  }

  async discard(taskId: string): Promise<void> {
    await this.options.configs.deleteTask(taskId);
  }

  async get(taskId: string, configId: string | undefined, principal: Principal): Promise<TaskPushNotificationConfig> {
    this.assertEnabled();
    const task = await this.options.tasks.get(taskId, principal.tenant);
    const id = configId ?? taskId;
    const found = await this.options.configs.get(taskId, id);
    if (!found || found.tenant !== task.tenant)
      throw new DomainError("not-found", `Push notification config "${id}" not found for task ${taskId}`, {
        taskId,
        pushNotificationConfigId: id,
      });
    return this.toWire(found);
  }

  async list(taskId: string, principal: Principal): Promise<TaskPushNotificationConfig[]> {
    this.assertEnabled();
    const task = await this.options.tasks.get(taskId, principal.tenant);
    const found = await this.options.configs.list(taskId);
    return found.filter((c) => c.tenant === task.tenant).map((c) => this.toWire(c));
  }

  /** Idempotent: deleting a config that is not there succeeds (as the SDKs do). */
  async delete(taskId: string, configId: string, principal: Principal): Promise<void> {
    this.assertEnabled();
    await this.options.tasks.get(taskId, principal.tenant);
    await this.options.configs.delete(taskId, configId);
  }

  /** The push target shown in A2ATaskState: the default config (id == task id), else the oldest. No secrets. */
  async stateView(task: Pick<TaskRecord, "taskId" | "tenant">): Promise<A2ATaskState["pushConfig"]> {
    if (!this.options.enabled) return undefined;
    const found = (await this.options.configs.list(task.taskId)).filter((c) => c.tenant === task.tenant);
    const chosen = found.find((c) => c.configId === task.taskId) ?? found[0];
    if (!chosen) return undefined;
    return { url: chosen.url, ...(chosen.tokenFingerprint ? { tokenFingerprint: chosen.tokenFingerprint } : {}) };
  }

  /**
   * The caller's tenant's dead letters, newest first. Filtered by a task, the task must be the caller's: one of
   * another tenant (or none at all) is not found, as on every other surface, rather than an empty list. The
   * letters are read first (they are the tenant's own whatever the task), so those of a task already past its
   * retention stay readable; only an empty answer needs the task looked up.
   */
  async deadLetters(principal: Principal, filter: { taskId?: string; limit: number }): Promise<PushDeadLetter[]> {
    this.assertEnabled();
    const letters = await this.options.configs.listDeadLetters(principal.tenant, filter);
    if (filter.taskId !== undefined && letters.length === 0)
      await this.options.tasks.get(filter.taskId, principal.tenant);
    return letters;
  }

  // ------------------------------------------------------------------------------------------

  private async registerValidated(
    task: TaskRecord,
    config: PushNotificationConfig,
    principal: Principal,
  ): Promise<TaskPushNotificationConfig> {
    // A config registered now starts after the task's current version: it hears what happens next.
    const interruptId = this.options.tasks.contextOf(task).interrupt?.interruptId;
    const key = `${task.a2a.state}|${interruptId ?? ""}`;
    const stored = await this.store(task, config, task.version, key, principal);
    this.options.onRegistered?.(task.taskId);
    return this.toWire(stored);
  }

  private async store(
    task: Pick<TaskRecord, "taskId" | "tenant">,
    config: PushNotificationConfig,
    cursor: number,
    lastStatusKey: string | null,
    principal: Principal,
  ): Promise<PushConfigRecord> {
    const secrets = this.options.secrets;
    if (!secrets) throw new DomainError("push-not-supported", "Push Notification is not supported by this agent");
    const limit = this.options.limitOf?.(principal);
    // A limit of 0: refused before anything is looked up or written.
    if (limit?.max === 0) throw limit.refused(task.taskId);
    const configId = config.id ?? (await this.unusedDefaultId(task));
    const plain: PushSecrets = {
      ...(config.token !== undefined ? { token: config.token } : {}),
      ...(config.authentication?.credentials !== undefined ? { credentials: config.authentication.credentials } : {}),
    };
    const hasSecrets = plain.token !== undefined || plain.credentials !== undefined;
    try {
      return await this.options.configs
        .upsert(
          {
            tenant: task.tenant,
            taskId: task.taskId,
            configId,
            url: config.url,
            schemes: config.authentication ? [...config.authentication.schemes] : null,
            sealed: hasSecrets ? secrets.seal(plain, secretsAad(task.tenant, task.taskId, configId)) : null,
            tokenFingerprint: config.token !== undefined ? secrets.fingerprint(config.token) : null,
            protocolVersion: config.protocolVersion ?? UNNAMED_A2A_VERSION,
            updatedAt: this.clock().toISOString(),
          },
          initialDelivery(cursor, lastStatusKey),
          limit?.max ?? this.options.maxConfigsPerTask,
        )
        .then((stored) => {
          this.options.onStored?.(task.taskId);
          return stored;
        });
    } catch (err) {
      if (err instanceof TooManyPushConfigsError) {
        if (limit) throw limit.refused(task.taskId);
        throw invalidParams(
          `task ${task.taskId} already has the maximum of ${err.max} push notification configs; delete one or reuse an id`,
          { taskId: task.taskId, max: err.max },
        );
      }
      throw err;
    }
  }

  /**
   * The id of a config created without one. Neither the A2A specification nor either TCK fixes it (the TCKs
   * always send an id; the task id is only what the SDKs default to), so the task id is used only while it is
   * free, and a later id-less config gets its own id instead of silently replacing the first.
   */
  private async unusedDefaultId(task: Pick<TaskRecord, "taskId">): Promise<string> {
    return (await this.options.configs.get(task.taskId, task.taskId)) ? randomUUID() : task.taskId;
  }

  /**
   * The config as answers show it: id, url and schemes. The token and credentials are write-only (RFC 0214
   * §A: a push credential enters no response), so they stay sealed; only the webhook ever receives them.
   */
  private toWire(config: PushConfigRecord): TaskPushNotificationConfig {
    const pushNotificationConfig: TaskPushNotificationConfig["pushNotificationConfig"] = {
      id: config.configId,
      url: config.url,
      ...(config.schemes ? { authentication: { schemes: [...config.schemes] } } : {}),
    };
    return { taskId: config.taskId, pushNotificationConfig };
  }
}

function checkSecret(value: string, path: string): void {
  if (value.length === 0 || value.length > MAX_SECRET_LENGTH || !HEADER_SAFE.test(value)) {
    // The value itself is never echoed.
    throw invalidParams(
      `${path} must be 1 to ${MAX_SECRET_LENGTH} visible ASCII characters (it is sent in an HTTP header)`,
      { path },
    );
  }
}
