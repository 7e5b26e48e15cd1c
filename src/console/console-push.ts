import { UNNAMED_A2A_VERSION, type A2AVersion } from "../domain/a2a-version.js";
import { requireScope } from "../auth/principal.js";
import type { CallContext } from "../auth/call-context.js";
import { DomainError, taskNotFound } from "../domain/errors.js";
import type { PushDeliveryWorker } from "../push/push-delivery-worker.js";
import { targetOf } from "../push/webhook-attempts.js";
import { CONSOLE_SCOPE, type ConsoleAccess } from "./console-access.js";
import type { PushConfigRecord, PushConfigStore, PushDeadLetter, PushDelivery } from "../store/push-config-store.js";
import { CallerStoreCalls } from "../store/store-call-budget.js";

/** One push config as the console shows it: where it goes (scheme, host, port only) and how delivery stands. */
export interface ConsolePushConfig {
  configId: string;
  target: string;
  protocolVersion: A2AVersion;
  createdAt: string;
  updatedAt: string;
  delivery: PushDelivery;
  /** The instance delivering this config's events now (several instances), while it holds the lease. */
  lease?: { owner: string; epoch: number; expiresAt: string };
}

export interface ConsolePushView {
  enabled: boolean;
  configs: ConsolePushConfig[];
  deadLetters: PushDeadLetter[];
}

export interface ConsolePushOptions {
  enabled: boolean;
  configs: PushConfigStore;
  worker: PushDeliveryWorker | undefined;
  /** The console's tenant rule: a task in a tenant the operator may not see is not found. */
  access: ConsoleAccess;
  /** STORE_TIMEOUT_MS: the longest a console call waits for one store operation. */
  storeTimeoutMs: number;
}

/**
 * Push delivery for the operator console: each config of a task with its delivery cursor, attempts and
 * next retry, the task's dead letters, and "retry now" (the wait before the next attempt is dropped and the
 * worker woken; the attempt count and the retry policy stay). Never shows a token, credentials or a path.
 * `tenant` is the task's tenant (ConsoleOperations.tenantOf); one the operator may not see reads as a task
 * that does not exist. Store calls are bounded as on every other surface (STORE_TIMEOUT_MS, or the caller's
 * deadline): a store out of reach answers `unavailable` there.
 */
export class ConsolePush {
  private readonly storeCalls: CallerStoreCalls;

  constructor(private readonly options: ConsolePushOptions) {
    this.storeCalls = new CallerStoreCalls(options.storeTimeoutMs);
  }

  async view(taskId: string, tenant: string, ctx: CallContext): Promise<ConsolePushView> {
    this.check(taskId, tenant, ctx);
    if (!this.options.enabled) return { enabled: false, configs: [], deadLetters: [] };
    const store = this.options.configs;
    const [all, deadLetters] = await this.storeCalls.bounded(ctx, () =>
      Promise.all([store.list(taskId), store.listDeadLetters(tenant, { taskId, limit: 100 })]),
    );
    const configs = all.filter((c) => c.tenant === tenant);
    return {
      enabled: true,
      configs: configs.map((c) => ({
        configId: c.configId,
        target: targetOf(c.url),
        protocolVersion: c.protocolVersion ?? UNNAMED_A2A_VERSION,
        createdAt: c.createdAt,
        updatedAt: c.updatedAt,
        delivery: c.delivery,
        ...leaseOf(c),
      })),
      deadLetters,
    };
  }

  async retryNow(taskId: string, configId: string, tenant: string, ctx: CallContext): Promise<ConsolePushConfig> {
    this.check(taskId, tenant, ctx);
    requireScope(ctx.principal, "webhooks:manage");
    const { configs, worker } = this.options;
    if (!this.options.enabled || !worker)
      throw new DomainError("push-not-supported", "Push Notification is not supported by this agent");
    const config = await this.storeCalls.bounded(ctx, () => configs.get(taskId, configId));
    if (!config || config.tenant !== tenant)
      throw new DomainError("not-found", `Push notification config "${configId}" not found for task ${taskId}`, {
        taskId,
        configId,
      });
    if (config.delivery.settled)
      throw new DomainError("conflict", `push config "${configId}" has nothing left to deliver`, { taskId, configId });
    const delivery = { ...config.delivery, nextAttemptAt: null };
    if (
      !(await this.storeCalls.bounded(ctx, () =>
        configs.updateDelivery(
          taskId,
          configId,
          { revision: config.revision, cursor: config.delivery.cursor },
          delivery,
          null,
        ),
      ))
    ) {
      throw new DomainError("conflict", `push config "${configId}" moved while retrying; read it again`, {
        taskId,
        configId,
      });
    }
    await this.storeCalls.bounded(ctx, () => worker.wakeTask(taskId));
    return {
      configId,
      target: targetOf(config.url),
      protocolVersion: config.protocolVersion ?? UNNAMED_A2A_VERSION,
      createdAt: config.createdAt,
      updatedAt: config.updatedAt,
      delivery,
    };
  }

  /** "Retry now" for every config of the task that still has something to deliver; answers their ids. */
  async retryTask(taskId: string, tenant: string, ctx: CallContext): Promise<string[]> {
    this.check(taskId, tenant, ctx);
    requireScope(ctx.principal, "webhooks:manage");
    if (!this.options.enabled || !this.options.worker)
      throw new DomainError("push-not-supported", "Push Notification is not supported by this agent");
    const retried: string[] = [];
    const configs = this.options.configs;
    for (const config of await this.storeCalls.bounded(ctx, () => configs.list(taskId))) {
      if (config.tenant !== tenant || config.delivery.settled) continue;
      await this.retryNow(taskId, config.configId, tenant, ctx);
      retried.push(config.configId);
    }
    return retried;
  }

  private check(taskId: string, tenant: string, ctx: CallContext): void {
    requireScope(ctx.principal, CONSOLE_SCOPE);
    if (!this.options.access.canSee(ctx.principal, tenant)) throw taskNotFound(taskId);
  }
}

function leaseOf(config: PushConfigRecord): Pick<ConsolePushConfig, "lease"> {
  const lease = config.lease;
  return lease?.owner && lease.expiresAt
    ? { lease: { owner: lease.owner, epoch: lease.epoch, expiresAt: lease.expiresAt } }
    : {};
}
