import type { Principal } from "../auth/principal.js";
import type { Logger } from "../observability/logger.js";
import type { TaskRecord } from "../domain/task-record.js";
import { failureMessage } from "./nodes/node-executor.js";
import type { TaskRepository } from "./task-repository.js";
import { SYSTEM_TIMEOUT } from "./workflow-walk.js";

export interface TimerSchedulerOptions {
  repository: TaskRepository;
  pollMs: number;
  clock: () => Date;
  logger: Logger;
  /** A due delay timer: the driver completes the node. */
  kick(taskId: string): void;
  /** An approval gate past its deadline is answered "reject" by the system principal. */
  resolveInterrupt(
    taskId: string,
    principal: Principal,
    nodeId: string,
    resumeValue: Record<string, unknown>,
  ): Promise<unknown>;
}

/**
 * The durable timer scheduler. Timers are stored with their due time (XState's delayed events are not part
 * of a persisted snapshot), so they fire after a restart too; the store is polled for due ones. A due
 * timer is claimed before it fires (its due time moves one lease TTL ahead), so it fires once across
 * instances, and again only if the claimer died before its write.
 */
export class TimerScheduler {
  private loop: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly options: TimerSchedulerOptions) {}

  start(): void {
    this.stopping = false;
    this.schedule();
  }

  stop(): void {
    this.stopping = true;
    clearTimeout(this.loop);
  }

  async fireDueTimers(): Promise<void> {
    const { repository, logger } = this.options;
    const due = await repository.dueTimers(this.options.clock(), 100);
    for (const taskId of due) {
      // Every instance polls: the one whose claim moves the due time fires it.
      if (!(await repository.claimTimer(taskId))) continue;
      const record = await repository.find(taskId);
      if (!record) continue;
      const timer = repository.contextOf(record).timer;
      if (timer?.purpose === "interrupt-timeout")
        await this.expireInterrupt(record).catch((err: unknown) =>
          logger.warn({ err, taskId }, "interrupt timeout failed"),
        );
      else this.options.kick(taskId);
    }
  }

  private schedule(): void {
    if (this.stopping) return;
    this.loop = setTimeout(() => {
      void this.fireDueTimers()
        .catch((err: unknown) => this.options.logger.error({ err }, "timer scheduler failed"))
        .finally(() => this.schedule());
    }, this.options.pollMs);
    this.loop.unref();
  }

  /** An approval gate that times out is auto-rejected; a clarification that times out fails the run. */
  private async expireInterrupt(record: TaskRecord): Promise<void> {
    const { repository } = this.options;
    const system: Principal = { tenant: record.tenant, id: SYSTEM_TIMEOUT, scopes: "*" };
    const interrupt = repository.contextOf(record).interrupt;
    if (!interrupt) return;
    if (interrupt.kind === "approval") {
      await this.options.resolveInterrupt(record.taskId, system, interrupt.nodeId, {
        action: "reject",
        reason: "timeout",
      });
      return;
    }
    await repository.withLock(record.taskId, async () => {
      const error = {
        code: `${interrupt.kind}_timeout`,
        message: `no answer for "${interrupt.nodeId}" before its deadline`,
        nodeId: interrupt.nodeId,
      };
      await repository.commit(record.taskId, {
        type: "FAIL",
        at: this.options.clock().toISOString(),
        error,
        statusMessage: failureMessage(record, error.code),
      });
    });
    this.options.kick(record.taskId);
  }
}
