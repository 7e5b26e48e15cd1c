import { backoffDelay, giveUpReason, type RetryPolicy } from "../domain/retry-policy.js";
import { isTerminalA2AState } from "../domain/run-status.js";
import type { Logger } from "../observability/logger.js";
import type { SecretValue } from "../secrets/secret-value.js";
import type { PushConfigRecord, PushConfigStore, PushDelivery } from "../store/push-config-store.js";
import type { PushHttpClient } from "./push-http-client.js";
import { DeliverySlots } from "./delivery-slots.js";
import { DeliveryLeases, type PushLeaseSettings } from "./push-delivery-leases.js";
import type { CommittedTransition } from "../store/commit-bus.js";
import type { PushBodyEncoders, PushCommits, PushTaskLog } from "./push-ports.js";
import type { PushSecretBox } from "./push-secrets.js";
import type { PushTransitions } from "./push-settings.js";
import { WatchedTasks } from "./push-watched-tasks.js";
import { hasPushWork, isPushable } from "./push-worthy.js";
import type { PushJwtSigner } from "./push-jwt.js";
import { statusKeyOf, targetOf, WebhookAttempts } from "./webhook-attempts.js";

export interface PushDeliveryWorkerOptions {
  tasks: PushTaskLog;
  configs: PushConfigStore;
  /** Commits as they happen (wake-ups); the sweep covers anything missed. */
  /** This instance's commits; other instances' only when pushed (a change stream), else the sweep finds them. */
  commits: PushCommits;
  /** This instance's id and the lease timing (the task lease settings): one instance delivers a config at a time. */
  leases: PushLeaseSettings;
  /** The body of each A2A version a config can be registered over. */
  bodies: PushBodyEncoders;
  client: PushHttpClient;
  secrets: PushSecretBox;
  signingKey: SecretValue<string>;
  /** Signs the Bearer JWT of configs that ask for Bearer without credentials. */
  jwt: PushJwtSigner;
  logger: Logger;
  transitions: PushTransitions;
  retry: RetryPolicy;
  timeoutMs: number;
  concurrency: number;
  /** Each tenant's weight in the round robin for slots (WORK_TENANT_WEIGHTS); 1 when not named. */
  tenantWeights?: Readonly<Record<string, number>>;
  breaker: { threshold: number; cooldownMs: number };
  sweepIntervalMs: number;
  /** How long a settled config and a dead letter are kept (the task retention). */
  retentionMs: number;
  clock?: () => Date;
  random?: () => number;
}

/** A config whose task is not found is only dropped once it is this old (an inline config is stored just before its task). */
const ORPHAN_GRACE_MS = 5 * 60 * 1000;
const SWEEP_PAGE = 500;

type Step = { kind: "done" } | { kind: "reload" };

/**
 * Delivers push notifications from the task event log (the outbox). Each config has a cursor (the last log
 * sequence handled); a delivery reads the events after it, POSTs each pushable status change in order,
 * and moves the cursor only after the webhook answered 2xx, a pushable change was given up on (dead
 * letter), or an event is not pushable. So a crash at any point re-sends at most the one event in flight,
 * with the same `X-A2A-Event-Id`: at-least-once, in order per task and config.
 *
 * Several instances: one instance at a time delivers a config's events, under the config's delivery lease
 * (`DeliveryLeases`). An instance claims it only when there is something to push, keeps it (renewed by the
 * heartbeat) while it delivers or waits to retry, and gives it back when the config is idle. Each cursor
 * move is fenced by the lease, so an instance that lost it (frozen past the TTL) cannot move the cursor,
 * and it checks the lease before a POST. A lease left behind by a dead instance is found by every
 * instance's heartbeat once it expires: a survivor continues from the stored cursor.
 *
 * Wake-ups: the transition hook (after commit), other instances' commits (the change stream) for tasks
 * with configs, retry timers (persisted as `nextAttemptAt`), expired leases (heartbeat), a sweep of
 * every unsettled config at start (what a crash left pending) and then every `sweepIntervalMs`.
 * One delivery runs per config at a time; at most `concurrency` run at once; a circuit breaker per
 * webhook origin keeps a dead receiver from holding slots.
 */
export class PushDeliveryWorker {
  private readonly jobs = new Map<string, { again: boolean; done: Promise<void> }>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** The tenant of each config with a delivery running or waiting to retry here (its turn for a slot). */
  private readonly tenants = new Map<string, string>();
  private readonly slots: DeliverySlots;
  private readonly webhooks: WebhookAttempts;
  private readonly clock: () => Date;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  private readonly watched: WatchedTasks;
  private readonly leases: DeliveryLeases;

  constructor(private readonly options: PushDeliveryWorkerOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.slots = new DeliverySlots(options.concurrency, options.tenantWeights);
    this.webhooks = new WebhookAttempts({ ...options, clock: this.clock });
    this.watched = new WatchedTasks(options.commits, (taskId) => void this.wakeTask(taskId));
    this.leases = new DeliveryLeases({
      configs: options.configs,
      settings: options.leases,
      logger: options.logger,
      clock: this.clock,
      expired: (keys) => {
        for (const { taskId, configId } of keys) {
          this.watched.add(taskId);
          this.enqueue(taskId, configId);
        }
      },
    });
  }

  /** Listens to commits and delivers whatever is pending from before (a crash, a restart). */
  async start(): Promise<{ pending: number }> {
    this.stopped = false;
    this.unsubscribe = this.options.commits.onAny((t) => this.onTransition(t));
    this.leases.start();
    const pending = await this.sweep();
    this.scheduleSweep();
    return { pending };
  }

  /** Stops taking work, waits for deliveries in flight (each bounded by the attempt timeout), gives the leases back. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.watched.clear();
    clearTimeout(this.sweepTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.slots.wakeAll();
    await this.sweeping?.catch(() => undefined);
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
    await this.leases.stop();
    await this.options.client.close();
  }

  /** A config of the task was stored: its commits are looked at from now on. */
  watchTask(taskId: string): void {
    this.watched.stored(taskId);
  }

  /** Delivers what is pending for every config of the task (after a commit or a registration). */
  async wakeTask(taskId: string): Promise<void> {
    if (this.stopped) return;
    const mark = this.watched.mark;
    try {
      let unsettled = 0;
      for (const config of await this.options.configs.list(taskId)) {
        if (config.delivery.settled) continue;
        unsettled++;
        this.enqueue(config.taskId, config.configId, config.tenant);
      }
      // Settled configs never reopen: a task with none left needs no more lookups (a new config watches it again).
      if (unsettled > 0) this.watched.add(taskId);
      else this.watched.deleteUnlessStored(taskId, mark);
    } catch (err) {
      // The periodic sweep picks it up.
      this.options.logger.error({ err, taskId }, "push: could not list the task's push configs");
    }
  }

  /** Enqueues every unsettled config; returns how many. */
  sweep(): Promise<number> {
    this.sweeping ??= (async () => {
      let after: { taskId: string; configId: string } | null = null;
      let count = 0;
      try {
        for (;;) {
          const page: PushConfigRecord[] = await this.options.configs.listUnsettled(after, SWEEP_PAGE);
          for (const config of page) {
            this.watched.add(config.taskId);
            this.enqueue(config.taskId, config.configId, config.tenant);
          }
          count += page.length;
          const last = page.at(-1);
          if (!last || page.length < SWEEP_PAGE || this.stopped) break;
          after = { taskId: last.taskId, configId: last.configId };
        }
      } finally {
        this.sweeping = undefined;
      }
      return count;
    })();
    return this.sweeping;
  }

  /** Configs with a delivery running or queued for a slot here, or waiting here to retry (the push backlog gauge). */
  backlog(): number {
    let waiting = 0;
    for (const key of this.timers.keys()) if (!this.jobs.has(key)) waiting++;
    return this.jobs.size + waiting;
  }

  /** Settles when no delivery is running (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.jobs.size > 0) await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
  }

  // ---------------------------------------------------------------- scheduling

  private onTransition(transition: CommittedTransition): void {
    const { taskId } = transition.record;
    if (!this.watched.has(taskId)) return;
    const last = transition.events.at(-1);
    if (last) this.watched.committedLocally(taskId, last.sequence);
    if (transition.events.some((e) => e.a2a?.status)) void this.wakeTask(taskId);
  }

  private scheduleSweep(): void {
    if (this.stopped) return;
    this.sweepTimer = setTimeout(() => {
      this.sweep()
        .catch((err: unknown) => this.options.logger.error({ err }, "push: sweep failed"))
        .finally(() => this.scheduleSweep());
    }, this.options.sweepIntervalMs);
    this.sweepTimer.unref();
  }

  /** `tenant`: whose turn the delivery waits for; a retry or an expired lease finds it kept from before. */
  private enqueue(taskId: string, configId: string, tenant?: string): void {
    if (this.stopped) return;
    const key = JSON.stringify([taskId, configId]);
    if (tenant !== undefined) this.tenants.set(key, tenant);
    const running = this.jobs.get(key);
    if (running) {
      running.again = true;
      return;
    }
    const job = { again: false, done: Promise.resolve() };
    this.jobs.set(key, job);
    job.done = (async () => {
      await this.slots.acquire(this.tenants.get(key) ?? "", this.stopped);
      try {
        for (;;) {
          do {
            job.again = false;
            if (this.stopped) break;
            try {
              await this.deliver(taskId, configId);
            } catch (err) {
              this.options.logger.error(
                { err, taskId, configId },
                "push: delivery failed unexpectedly; retrying later",
              );
              this.wakeAt(taskId, configId, this.clock().getTime() + this.options.retry.baseMs);
            }
          } while (job.again);
          // Idle (nothing pending, no retry waiting): the lease goes back, so any instance may deliver what comes next.
          if (!this.leases.isHeld(taskId, configId) || this.timers.has(key)) break;
          await this.leases
            .release(taskId, configId)
            .catch((err: unknown) =>
              this.options.logger.warn(
                { err, taskId, configId },
                "push: could not release the delivery lease; it expires",
              ),
            );
          if (!job.again || this.stopped) break;
        }
      } finally {
        this.slots.release();
        this.jobs.delete(key);
        if (!this.timers.has(key)) this.tenants.delete(key);
      }
    })();
  }

  private wakeAt(taskId: string, configId: string, at: number): void {
    if (this.stopped) return;
    const key = JSON.stringify([taskId, configId]);
    clearTimeout(this.timers.get(key));
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        this.enqueue(taskId, configId);
      },
      Math.max(0, at - this.clock().getTime()),
    );
    timer.unref();
    this.timers.set(key, timer);
  }

  // ---------------------------------------------------------------- delivery

  private async deliver(taskId: string, configId: string): Promise<void> {
    for (let reloads = 0; reloads < 5; reloads++) {
      const step = await this.deliverOnce(taskId, configId);
      if (step.kind === "done") return;
    }
    // Replaced or moved five times in a row by someone else: the next wake-up continues.
  }

  private async deliverOnce(taskId: string, configId: string): Promise<Step> {
    const { configs, tasks, logger } = this.options;
    let config = await configs.get(taskId, configId);
    if (!config || config.delivery.settled) {
      this.leases.forget(taskId, configId);
      return { kind: "done" };
    }
    const now = this.clock().getTime();
    let mine = this.leases.holds(config);
    // Another instance delivers it (it watches the task too); if it dies, the expired-lease scan finds the config.
    if (!mine && this.leases.heldElsewhere(config, now)) return { kind: "done" };
    if (!mine && config.lease?.owner) {
      // A lease its holder left behind (it died or froze past the TTL): taken over, pending work or not, so
      // it is given back cleanly once idle.
      const claimed = await this.leases.claim(config);
      if (!claimed) return { kind: "reload" };
      config = claimed;
      mine = true;
    }
    if (this.waitsForRetry(config, now)) return { kind: "done" };
    const task = await tasks.find(taskId);
    if (!task) {
      if (now - Date.parse(config.createdAt) > ORPHAN_GRACE_MS) {
        await configs.delete(taskId, configId);
        this.leases.forget(taskId, configId);
        logger.info({ taskId, configId }, "push: dropped the config of a task that no longer exists");
      }
      return { kind: "done" };
    }
    if (task.tenant !== config.tenant) {
      // Never deliver a task's events to a subscription of another tenant.
      await configs.delete(taskId, configId);
      this.leases.forget(taskId, configId);
      logger.error({ taskId, configId }, "push: dropped a config whose tenant does not match its task");
      return { kind: "done" };
    }
    if (config.delivery.cursor >= task.version) {
      // Registered on a task that had already ended: nothing will come, so settle (and let it expire).
      if (isTerminalA2AState(task.a2a.state)) {
        const expireAt = new Date(now + this.options.retentionMs).toISOString();
        const fence = this.leases.fence(taskId, configId);
        const expected = {
          revision: config.revision,
          cursor: config.delivery.cursor,
          ...(fence ? { lease: fence } : {}),
        };
        // Settling gives the lease back in the same write.
        if (await configs.updateDelivery(taskId, configId, expected, { ...config.delivery, settled: true }, expireAt))
          this.leases.forget(taskId, configId);
      }
      return { kind: "done" };
    }

    const events = await tasks.readEvents(taskId, 0);
    if (!mine) {
      // The lease is taken only when there is something to push; the cursor then moves under it.
      if (!hasPushWork(this.options.transitions, config.delivery, events)) return { kind: "done" };
      const claimed = await this.leases.claim(config);
      // Another instance claimed it first: the reload finds its lease.
      if (!claimed) return { kind: "reload" };
      config = claimed;
      if (this.waitsForRetry(config, this.clock().getTime())) return { kind: "done" };
    }
    const fence = this.leases.fence(taskId, configId);
    if (!fence) return { kind: "reload" };
    let expected = { revision: config.revision, cursor: config.delivery.cursor, lease: fence };
    let delivery: PushDelivery = { ...config.delivery };
    const revision = config.revision;
    const save = async (next: PushDelivery): Promise<boolean> => {
      const expireAt = next.settled ? new Date(this.clock().getTime() + this.options.retentionMs).toISOString() : null;
      if (!(await configs.updateDelivery(taskId, configId, expected, next, expireAt))) return false;
      if (next.settled) this.leases.forget(taskId, configId);
      expected = { revision, cursor: next.cursor, lease: fence };
      delivery = next;
      return true;
    };

    for (const event of events) {
      if (event.sequence <= delivery.cursor) continue;
      if (this.stopped) break;
      const status = event.a2a?.status;
      if (!status) {
        delivery = { ...delivery, cursor: event.sequence };
        continue;
      }
      const statusKey = statusKeyOf(event, status.state);
      const passed: PushDelivery = {
        ...delivery,
        cursor: event.sequence,
        lastStatusKey: statusKey,
        attempts: 0,
        nextAttemptAt: null,
        lastError: null,
        settled: isTerminalA2AState(status.state),
      };
      if (!isPushable(this.options.transitions, status.state, statusKey, delivery.lastStatusKey)) {
        delivery = passed;
        if (passed.settled && !(await save(passed))) return { kind: "reload" };
        continue;
      }
      // Everything before this event is handled; record it so a crash does not redo it.
      if (delivery.cursor !== expected.cursor && !(await save(delivery))) return { kind: "reload" };
      // A process that was frozen past its lease finds out here, before it POSTs.
      if (!(await this.leases.confirm(taskId, configId))) return { kind: "reload" };

      const outcome = await this.webhooks.attempt(config, task, event, events);
      if (outcome.kind === "blocked") {
        this.wakeAt(taskId, configId, outcome.retryAt);
        return { kind: "done" };
      }
      const { result } = outcome;
      if (result.ok) {
        if (!(await save(passed))) return { kind: "reload" };
        continue;
      }
      const attempts = delivery.attempts + 1;
      const lastError = result.error ?? `webhook answered ${result.status ?? "nothing"}`;
      const reason = giveUpReason(this.options.retry, result, attempts, {
        firstAt: Date.parse(event.timestamp),
        now: this.clock().getTime(),
      });
      if (reason) {
        await this.webhooks.deadLetter(config, event, status.state, reason, attempts, lastError);
        if (!(await save({ ...passed, lastError: `dead-lettered (${reason}): ${lastError}` })))
          return { kind: "reload" };
        continue;
      }
      const retryAt = this.clock().getTime() + backoffDelay(this.options.retry, attempts, this.options.random);
      logger.info(
        {
          taskId,
          configId,
          eventId: event.eventId,
          target: targetOf(config.url),
          attempts,
          retryInMs: retryAt - this.clock().getTime(),
          error: lastError,
        },
        "push: attempt failed; will retry",
      );
      if (!(await save({ ...delivery, attempts, nextAttemptAt: new Date(retryAt).toISOString(), lastError })))
        return { kind: "reload" };
      this.wakeAt(taskId, configId, retryAt);
      return { kind: "done" };
    }
    if (delivery.cursor !== expected.cursor && !(await save(delivery))) return { kind: "reload" };
    return { kind: "done" };
  }

  /** A retry is scheduled for later: wake then (the lease, if held, is kept through the wait). */
  private waitsForRetry(config: PushConfigRecord, now: number): boolean {
    const at = config.delivery.nextAttemptAt ? Date.parse(config.delivery.nextAttemptAt) : 0;
    if (at <= now) return false;
    this.wakeAt(config.taskId, config.configId, at);
    return true;
  }
}
