import { backoffDelay, giveUpReason, type RetryPolicy } from "../domain/retry-policy.js";
import { isFinalA2AState, isTerminalA2AState, type A2ATaskStateValue } from "../domain/run-status.js";
import type { Logger } from "../observability/logger.js";
import type { SecretValue } from "../secrets/secret-value.js";
import type { PushConfigRecord, PushConfigStore, PushDelivery } from "../store/push-config-store.js";
import type { RunEvent, TaskRecord } from "../store/task-store.js";
import { CircuitBreakers } from "./circuit-breaker.js";
import { artifactRefsUpTo } from "./push-artifact-refs.js";
import type { PushHttpClient, PushResult } from "./push-http-client.js";
import type { CommittedChange, CommittedChanges, PushBodyEncoders, PushTaskLog } from "./push-ports.js";
import { secretsAad, type PushSecretBox, type PushSecrets } from "./push-secrets.js";
import type { PushTransitions } from "./push-settings.js";
import { EVENT_ID_HEADER, NOTIFICATION_TOKEN_HEADER, SIGNATURE_HEADER, signPushBody, TIMESTAMP_HEADER } from "./push-signature.js";

export interface PushDeliveryWorkerOptions {
  tasks: PushTaskLog;
  configs: PushConfigStore;
  /** Commits as they happen (wake-ups); the sweep covers anything missed. */
  commits: CommittedChanges;
  /** The body of each A2A version a config can be registered over. */
  bodies: PushBodyEncoders;
  client: PushHttpClient;
  secrets: PushSecretBox;
  signingKey: SecretValue<string>;
  logger: Logger;
  transitions: PushTransitions;
  retry: RetryPolicy;
  timeoutMs: number;
  concurrency: number;
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
 * Wake-ups: the transition hook (after commit), retry timers (persisted as `nextAttemptAt`), a sweep of
 * every unsettled config at start (what a crash left pending) and then every `sweepIntervalMs`.
 * One delivery runs per config at a time; at most `concurrency` run at once; a circuit breaker per
 * webhook origin keeps a dead receiver from holding slots.
 */
export class PushDeliveryWorker {
  private readonly jobs = new Map<string, { again: boolean; done: Promise<void> }>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly slotWaiters: Array<() => void> = [];
  private readonly breakers: CircuitBreakers;
  private readonly clock: () => Date;
  private active = 0;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;
  /**
   * Tasks that have push configs, as this process knows them: configs stored here and every sweep's unsettled
   * ones. A commit of any other task costs no config lookup (most tasks have none).
   */
  private readonly watched = new Set<string>();
  /** Bumped by every stored config, so a lookup that raced one does not unwatch its task. */
  private storedConfigs = 0;

  constructor(private readonly options: PushDeliveryWorkerOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.breakers = new CircuitBreakers({ ...options.breaker, clock: () => this.clock().getTime() });
  }

  /** Listens to commits and delivers whatever is pending from before (a crash, a restart). */
  async start(): Promise<{ pending: number }> {
    this.stopped = false;
    this.unsubscribe = this.options.commits.onAny((t) => this.onTransition(t));
    const pending = await this.sweep();
    this.scheduleSweep();
    return { pending };
  }

  /** Stops taking work and waits for deliveries in flight (each bounded by the attempt timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.sweepTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const wake of this.slotWaiters.splice(0)) wake();
    await this.sweeping?.catch(() => undefined);
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
    await this.options.client.close();
  }

  /** A config of the task was stored: its commits are looked at from now on. */
  watchTask(taskId: string): void {
    this.storedConfigs++;
    this.watched.add(taskId);
  }

  /** Delivers what is pending for every config of the task (after a commit or a registration). */
  async wakeTask(taskId: string): Promise<void> {
    if (this.stopped) return;
    const storedBefore = this.storedConfigs;
    try {
      let unsettled = 0;
      for (const config of await this.options.configs.list(taskId)) {
        if (config.delivery.settled) continue;
        unsettled++;
        this.enqueue(config.taskId, config.configId);
      }
      // Settled configs never reopen: a task with none left needs no more lookups (a new config watches it again).
      if (unsettled > 0) this.watched.add(taskId);
      else if (this.storedConfigs === storedBefore) this.watched.delete(taskId);
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
            this.enqueue(config.taskId, config.configId);
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

  /** Settles when no delivery is running (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.jobs.size > 0) await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
  }

  // ---------------------------------------------------------------- scheduling

  private onTransition(transition: CommittedChange): void {
    const { taskId } = transition.record;
    if (this.watched.has(taskId) && transition.events.some((e) => e.a2a?.status)) void this.wakeTask(taskId);
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

  private enqueue(taskId: string, configId: string): void {
    if (this.stopped) return;
    const key = JSON.stringify([taskId, configId]);
    const running = this.jobs.get(key);
    if (running) {
      running.again = true;
      return;
    }
    const job = { again: false, done: Promise.resolve() };
    this.jobs.set(key, job);
    job.done = (async () => {
      await this.acquireSlot();
      try {
        do {
          job.again = false;
          if (this.stopped) break;
          try {
            await this.deliver(taskId, configId);
          } catch (err) {
            this.options.logger.error({ err, taskId, configId }, "push: delivery failed unexpectedly; retrying later");
            this.wakeAt(taskId, configId, this.clock().getTime() + this.options.retry.baseMs);
          }
        } while (job.again);
      } finally {
        this.releaseSlot();
        this.jobs.delete(key);
      }
    })();
  }

  private wakeAt(taskId: string, configId: string, at: number): void {
    if (this.stopped) return;
    const key = JSON.stringify([taskId, configId]);
    clearTimeout(this.timers.get(key));
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.enqueue(taskId, configId);
    }, Math.max(0, at - this.clock().getTime()));
    timer.unref();
    this.timers.set(key, timer);
  }

  private async acquireSlot(): Promise<void> {
    if (this.active < this.options.concurrency || this.stopped) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    this.active++;
  }

  private releaseSlot(): void {
    this.active--;
    this.slotWaiters.shift()?.();
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
    const config = await configs.get(taskId, configId);
    if (!config || config.delivery.settled) return { kind: "done" };
    const now = this.clock().getTime();
    if (config.delivery.nextAttemptAt && Date.parse(config.delivery.nextAttemptAt) > now) {
      this.wakeAt(taskId, configId, Date.parse(config.delivery.nextAttemptAt));
      return { kind: "done" };
    }
    const task = await tasks.find(taskId);
    if (!task) {
      if (now - Date.parse(config.createdAt) > ORPHAN_GRACE_MS) {
        await configs.delete(taskId, configId);
        logger.info({ taskId, configId }, "push: dropped the config of a task that no longer exists");
      }
      return { kind: "done" };
    }
    if (task.tenant !== config.tenant) {
      // Never deliver a task's events to a subscription of another tenant.
      await configs.delete(taskId, configId);
      logger.error({ taskId, configId }, "push: dropped a config whose tenant does not match its task");
      return { kind: "done" };
    }
    if (config.delivery.cursor >= task.version) {
      // Registered on a task that had already ended: nothing will come, so settle (and let it expire).
      if (isTerminalA2AState(task.a2a.state)) {
        const expireAt = new Date(now + this.options.retentionMs).toISOString();
        await configs.updateDelivery(taskId, configId, { revision: config.revision, cursor: config.delivery.cursor }, { ...config.delivery, settled: true }, expireAt);
      }
      return { kind: "done" };
    }

    const events = await tasks.readEvents(taskId, 0);
    let expected = { revision: config.revision, cursor: config.delivery.cursor };
    let delivery: PushDelivery = { ...config.delivery };
    const save = async (next: PushDelivery): Promise<boolean> => {
      const expireAt = next.settled ? new Date(this.clock().getTime() + this.options.retentionMs).toISOString() : null;
      if (!(await configs.updateDelivery(taskId, configId, expected, next, expireAt))) return false;
      expected = { revision: config.revision, cursor: next.cursor };
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
      const statusKey = `${status.state}|${interruptIdOf(event) ?? ""}`;
      const passed: PushDelivery = { ...delivery, cursor: event.sequence, lastStatusKey: statusKey, attempts: 0, nextAttemptAt: null, lastError: null, settled: isTerminalA2AState(status.state) };
      if (!this.isPushable(status.state, statusKey, delivery.lastStatusKey)) {
        delivery = passed;
        if (passed.settled && !(await save(passed))) return { kind: "reload" };
        continue;
      }
      // Everything before this event is handled; record it so a crash does not redo it.
      if (delivery.cursor !== expected.cursor && !(await save(delivery))) return { kind: "reload" };

      const outcome = await this.attempt(config, task, event, events);
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
      const reason = giveUpReason(this.options.retry, result, attempts, { firstAt: Date.parse(event.timestamp), now: this.clock().getTime() });
      if (reason) {
        await this.deadLetter(config, event, status.state, reason, attempts, lastError);
        if (!(await save({ ...passed, lastError: `dead-lettered (${reason}): ${lastError}` }))) return { kind: "reload" };
        continue;
      }
      const retryAt = this.clock().getTime() + backoffDelay(this.options.retry, attempts, this.options.random);
      logger.info({ taskId, configId, eventId: event.eventId, target: targetOf(config.url), attempts, retryInMs: retryAt - this.clock().getTime(), error: lastError }, "push: attempt failed; will retry");
      if (!(await save({ ...delivery, attempts, nextAttemptAt: new Date(retryAt).toISOString(), lastError }))) return { kind: "reload" };
      this.wakeAt(taskId, configId, retryAt);
      return { kind: "done" };
    }
    if (delivery.cursor !== expected.cursor && !(await save(delivery))) return { kind: "reload" };
    return { kind: "done" };
  }

  private isPushable(state: A2ATaskStateValue, statusKey: string, lastStatusKey: string | null): boolean {
    if (statusKey === lastStatusKey) return false;
    // The minimum set (OpenWOP RFC 0100 §4): a caller must hear when its task needs input or ends.
    return this.options.transitions === "all" || isFinalA2AState(state);
  }

  /** One POST, unless the origin's breaker is open. */
  private async attempt(config: PushConfigRecord, task: TaskRecord, event: RunEvent, log: RunEvent[]): Promise<{ kind: "blocked"; retryAt: number } | { kind: "sent"; result: PushResult }> {
    const origin = originOf(config.url);
    const gate = this.breakers.allow(origin);
    if (!gate.allowed) return { kind: "blocked", retryAt: gate.retryAt };

    let secrets: PushSecrets = {};
    if (config.sealed) {
      try {
        secrets = this.options.secrets.open(config.sealed, secretsAad(config.tenant, config.taskId, config.configId));
      } catch (err) {
        this.breakers.release(origin, gate.probe);
        this.options.logger.error({ err, taskId: config.taskId, configId: config.configId }, "push: the config's secrets cannot be decrypted (check PUSH_ENCRYPTION_KEY)");
        return { kind: "sent", result: { ok: false, retryable: true, error: "push secrets cannot be decrypted with the configured keys", durationMs: 0 } };
      }
    }
    // The body in the version the config was registered over (0.3 a bare status-update, 1.0 a StreamResponse).
    const encoder = this.options.bodies(config.protocolVersion);
    const body = encoder.encode(task, event, artifactRefsUpTo(log, event.sequence));
    const timestamp = Math.floor(this.clock().getTime() / 1000);
    const headers: Record<string, string> = {
      "Content-Type": encoder.contentType,
      [EVENT_ID_HEADER]: event.eventId,
      [TIMESTAMP_HEADER]: String(timestamp),
      [SIGNATURE_HEADER]: signPushBody(this.options.signingKey.reveal(), timestamp, body),
    };
    if (secrets.token) headers[NOTIFICATION_TOKEN_HEADER] = secrets.token;
    const scheme = config.schemes?.[0];
    if (scheme && secrets.credentials) headers["Authorization"] = `${scheme} ${secrets.credentials}`;

    const result = await this.options.client.post({ url: config.url, body, headers, timeoutMs: this.options.timeoutMs });
    if (result.ok || (result.status !== undefined && !result.retryable)) this.breakers.success(origin);
    else if (result.retryable) this.breakers.failure(origin, gate.probe);
    else this.breakers.release(origin, gate.probe);
    this.options.logger.debug({ taskId: config.taskId, configId: config.configId, eventId: event.eventId, status: result.status, ok: result.ok, durationMs: result.durationMs }, "push: attempt");
    return { kind: "sent", result };
  }

  private async deadLetter(config: PushConfigRecord, event: RunEvent, state: string, reason: "max-attempts" | "max-age" | "not-retryable", attempts: number, lastError: string): Promise<void> {
    const now = this.clock();
    const target = targetOf(config.url);
    await this.options.configs.addDeadLetter({
      id: `${event.eventId}:${config.configId}`,
      tenant: config.tenant,
      taskId: config.taskId,
      configId: config.configId,
      eventId: event.eventId,
      sequence: event.sequence,
      state,
      target,
      reason,
      attempts,
      lastError,
      eventAt: event.timestamp,
      createdAt: now.toISOString(),
      expireAt: new Date(now.getTime() + this.options.retentionMs).toISOString(),
    });
    this.options.logger.warn({ taskId: config.taskId, configId: config.configId, eventId: event.eventId, target, reason, attempts, lastError }, "push: given up; dead letter recorded");
  }
}

function interruptIdOf(event: RunEvent): string | undefined {
  const openwop = event.a2a?.metadata?.["openwop"] as { interrupt?: { interruptId?: unknown } } | undefined;
  const id = openwop?.interrupt?.interruptId;
  return typeof id === "string" ? id : undefined;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * The webhook as logs and dead letters show it: scheme, host and port only. Paths and queries often carry
 * secrets (e.g. `/services/T0/B0/<secret>`), so they are never shown; the config id says which webhook it is.
 */
export function targetOf(url: string): string {
  return originOf(url);
}
