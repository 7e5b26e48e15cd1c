import { requireScope, type Principal } from "../auth/principal.js";
import { DomainError, taskNotFound } from "../domain/errors.js";
import type { PushDeliveryWorker } from "../push/push-delivery-worker.js";
import { targetOf } from "../push/webhook-attempts.js";
import { CONSOLE_SCOPE, type ConsoleAccess } from "./console-access.js";
import type { PushConfigRecord, PushConfigStore, PushDeadLetter, PushDelivery } from "../store/push-config-store.js";

/** One push config as the console shows it: where it goes (scheme, host, port only) and how delivery stands. */
export interface ConsolePushConfig {
  configId: string;
  target: string;
  protocolVersion: "0.3" | "1.0";
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
}

/**
 * Push delivery for the operator console: each config of a task with its delivery cursor, attempts and
 * next retry, the task's dead letters, and "retry now" (the wait before the next attempt is dropped and the
 * worker woken; the attempt count and the retry policy stay). Never shows a token, credentials or a path.
 * `tenant` is the task's tenant (ConsoleOperations.tenantOf); one the operator may not see reads as a task
 * that does not exist.
 */
export class ConsolePush {
  constructor(private readonly options: ConsolePushOptions) {}

  async view(taskId: string, tenant: string, operator: Principal): Promise<ConsolePushView> {
    this.check(taskId, tenant, operator);
    if (!this.options.enabled) return { enabled: false, configs: [], deadLetters: [] };
    const configs = (await this.options.configs.list(taskId)).filter((c) => c.tenant === tenant);
    const deadLetters = await this.options.configs.listDeadLetters(tenant, { taskId, limit: 100 });
    return {
      enabled: true,
      configs: configs.map((c) => ({ configId: c.configId, target: targetOf(c.url), protocolVersion: c.protocolVersion ?? "0.3", createdAt: c.createdAt, updatedAt: c.updatedAt, delivery: c.delivery, ...leaseOf(c) })),
      deadLetters,
    };
  }

  async retryNow(taskId: string, configId: string, tenant: string, operator: Principal): Promise<ConsolePushConfig> {
    this.check(taskId, tenant, operator);
    requireScope(operator, "webhooks:manage");
    const { configs, worker } = this.options;
    if (!this.options.enabled || !worker) throw new DomainError("push-not-supported", "Push Notification is not supported by this agent");
    const config = await configs.get(taskId, configId);
    if (!config || config.tenant !== tenant) throw new DomainError("not-found", `Push notification config "${configId}" not found for task ${taskId}`, { taskId, configId });
    if (config.delivery.settled) throw new DomainError("conflict", `push config "${configId}" has nothing left to deliver`, { taskId, configId });
    const delivery = { ...config.delivery, nextAttemptAt: null };
    if (!(await configs.updateDelivery(taskId, configId, { revision: config.revision, cursor: config.delivery.cursor }, delivery, null))) {
      throw new DomainError("conflict", `push config "${configId}" moved while retrying; read it again`, { taskId, configId });
    }
    await worker.wakeTask(taskId);
    return { configId, target: targetOf(config.url), protocolVersion: config.protocolVersion ?? "0.3", createdAt: config.createdAt, updatedAt: config.updatedAt, delivery };
  }

  /** "Retry now" for every config of the task that still has something to deliver; answers their ids. */
  async retryTask(taskId: string, tenant: string, operator: Principal): Promise<string[]> {
    this.check(taskId, tenant, operator);
    requireScope(operator, "webhooks:manage");
    if (!this.options.enabled || !this.options.worker) throw new DomainError("push-not-supported", "Push Notification is not supported by this agent");
    const retried: string[] = [];
    for (const config of await this.options.configs.list(taskId)) {
      if (config.tenant !== tenant || config.delivery.settled) continue;
      await this.retryNow(taskId, config.configId, tenant, operator);
      retried.push(config.configId);
    }
    return retried;
  }

  private check(taskId: string, tenant: string, operator: Principal): void {
    requireScope(operator, CONSOLE_SCOPE);
    if (!this.options.access.canSee(operator, tenant)) throw taskNotFound(taskId);
  }
}

function leaseOf(config: PushConfigRecord): Pick<ConsolePushConfig, "lease"> {
  const lease = config.lease;
  return lease?.owner && lease.expiresAt ? { lease: { owner: lease.owner, epoch: lease.epoch, expiresAt: lease.expiresAt } } : {};
}
