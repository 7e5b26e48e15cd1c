import { randomUUID } from "node:crypto";
import type { Authenticator } from "../auth/authenticator.js";
import type { Principal } from "../auth/principal.js";
import type { CreationGate, StreamGate } from "../engine/task-admission.js";
import type { Logger } from "../observability/logger.js";
import type { TenantUsageStore } from "../store/tenant-usage-store.js";
import { LimitResolution, type BoundLimit, type BoundLimits } from "./limit-resolution.js";
import { COUNT_RETRY_SECONDS, limitRefusal, overloadRefusal, type RefusalReason } from "./limit-refusals.js";
import type { LimitName, TenantLimitSettings } from "./limit-settings.js";
import { TenantUsage, type TenantUsageView } from "./tenant-usage.js";
import { TokenBucket } from "./token-bucket.js";

export interface TenantLimitsOptions {
  settings: TenantLimitSettings;
  /** Places for tasks about to be created and the instances' beats; without it runningTasks is not enforced. */
  store?: TenantUsageStore;
  /** This instance (INSTANCE_ID), and how often it beats and how long a beat lasts (the task leases' own). */
  instanceId: string;
  heartbeatMs: number;
  ttlMs: number;
  /** Why the instance sheds new tasks now (overload-monitor.ts), or undefined. */
  shedding?: () => string | undefined;
  /** Told of every refusal (the metrics' counter). */
  onRefusal?: (tenant: string, reason: RefusalReason) => void;
  logger: Logger;
  clock?: () => number;
}

/**
 * TENANT_LIMITS at work (docs/operating.md "Tenant limits"). Checked at admission, after authentication and
 * before anything is written, and refused in each binding's own form (`rate-limited`: 429 + Retry-After,
 * RESOURCE_EXHAUSTED + RetryInfo, JSON-RPC -32029 with the retry time in `data`, OpenWOP `rate_limited`):
 * - requestsPerSecond + burst: every authenticated call (`chargingAuthenticator`), before its body is read;
 * - tasksPerMinute and runningTasks: task creations only (`admit`, the engine's CreationGate); replies, cancels,
 *   reads and approvals create nothing and pass; new tasks are also where overload is shed;
 * - streams: streams as they open (`open`, the StreamGate); pushConfigsPerTask: push-config writes.
 * Across instances: runningTasks is exact (the store counts the tenant's unfinished tasks and the places held for
 * creations under way); the rates are each instance's share, 1/N of the limit with N the live instances (their
 * beats); streams count this instance's own and the others' as of their last beat.
 */
export class TenantLimits implements CreationGate, StreamGate {
  readonly resolution: LimitResolution;
  readonly usage: TenantUsage;
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly localStreams = new Map<string, number>();
  private remoteStreams = new Map<string, number>();
  private instances = 1;
  private beating: NodeJS.Timeout | undefined;
  private readonly clock: () => number;

  constructor(private readonly options: TenantLimitsOptions) {
    this.resolution = new LimitResolution(options.settings);
    this.clock = options.clock ?? Date.now;
    this.usage = new TenantUsage(this.resolution.namedTenants(), this.clock);
  }

  /** Whether any entry sets a requestsPerSecond: else calls are not charged at all. */
  get chargesRequests(): boolean {
    return setsAny(this.options.settings, ["requestsPerSecond"]);
  }

  /** Live instances sharing the rates (1 until the first beat). */
  get liveInstances(): number {
    return this.instances;
  }

  /** Starts the beat when a rate or a stream limit is set anywhere (nothing to share otherwise). */
  start(): void {
    if (!this.options.store || !setsAny(this.options.settings, ["requestsPerSecond", "tasksPerMinute", "streams"]))
      return;
    const beat = async () => {
      try {
        await this.beat();
      } catch (err) {
        this.options.logger.debug({ err }, "tenant limits: the instance beat failed; the last shares stand");
      }
      if (this.beating !== undefined) this.beating = setTimeout(beat, this.options.heartbeatMs).unref();
    };
    this.beating = setTimeout(beat, 0).unref();
  }

  stop(): void {
    clearTimeout(this.beating);
    this.beating = undefined;
  }

  /** One beat: this instance's streams out, the live instances and their streams in. */
  async beat(): Promise<void> {
    const { store, instanceId, ttlMs } = this.options;
    if (!store) return;
    const now = this.clock();
    const live = await store.beat(
      { instanceId, expiresAt: new Date(now + ttlMs), streams: Object.fromEntries(this.localStreams) },
      new Date(now),
    );
    const remote = new Map<string, number>();
    for (const other of live) {
      if (other.instanceId === instanceId) continue;
      for (const [bucket, open] of Object.entries(other.streams)) remote.set(bucket, (remote.get(bucket) ?? 0) + open);
    }
    this.remoteStreams = remote;
    this.instances = Math.max(1, live.length);
  }

  /** The request rate: charged once per authenticated call; throws the refusal. */
  chargeRequest(principal: Principal): void {
    const bound = this.resolution.of(principal);
    const rps = bound.requestsPerSecond;
    if (!rps) return;
    const burst = bound.burst?.value ?? Math.max(1, Math.ceil(rps.value));
    const wait = this.take("requests", rps, rps.value, burst);
    if (wait > 0) {
      throw this.refused(
        principal,
        "requestsPerSecond",
        limitRefusal("requestsPerSecond", rps, principal.tenant, `too many requests (burst ${burst})`, wait),
      );
    }
    this.usage.request(principal.tenant);
  }

  async admit(principal: Principal): Promise<() => void> {
    const shedding = this.options.shedding?.();
    if (shedding) throw this.refused(principal, "overload", overloadRefusal(shedding));
    const bound = this.resolution.of(principal);
    const tpm = bound.tasksPerMinute;
    if (tpm) {
      const wait = this.take("tasks", tpm, tpm.value / 60, tpm.value);
      if (wait > 0)
        throw this.refused(
          principal,
          "tasksPerMinute",
          limitRefusal("tasksPerMinute", tpm, principal.tenant, "too many new tasks", wait),
        );
    }
    const running = bound.runningTasks;
    const store = this.options.store;
    if (!running || !store) {
      this.usage.task(principal.tenant, undefined);
      return () => {};
    }
    try {
      return await this.holdRunningPlace(principal, running, store);
    } catch (err) {
      // The creation does not happen: it takes no token from the per-minute allowance.
      if (tpm) this.bucketOf("tasks", tpm, tpm.value).refund(this.share(tpm.value));
      throw err;
    }
  }

  open(principal: Principal): () => void {
    const streams = this.resolution.of(principal).streams;
    if (streams) {
      const local = this.localStreams.get(streams.bucket) ?? 0;
      const open = local + (this.remoteStreams.get(streams.bucket) ?? 0);
      if (open >= streams.value)
        throw this.refused(
          principal,
          "streams",
          limitRefusal(
            "streams",
            streams,
            principal.tenant,
            `${open} open stream${open === 1 ? "" : "s"}`,
            COUNT_RETRY_SECONDS,
          ),
        );
      this.localStreams.set(streams.bucket, local + 1);
    }
    this.usage.stream(principal.tenant, 1);
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.usage.stream(principal.tenant, -1);
      if (!streams) return;
      const left = (this.localStreams.get(streams.bucket) ?? 1) - 1;
      if (left > 0) this.localStreams.set(streams.bucket, left);
      else this.localStreams.delete(streams.bucket);
    };
  }

  /** The most push configs one task may hold for this caller (pushConfigsPerTask). */
  pushConfigsPerTask(principal: Principal): BoundLimit | undefined {
    return this.resolution.of(principal).pushConfigsPerTask;
  }

  /** A push config refused: the task holds the most it may (`held` ≥ the limit). */
  pushConfigsRefused(principal: Principal, taskId: string, bound: BoundLimit): Error {
    return this.refused(
      principal,
      "pushConfigsPerTask",
      limitRefusal(
        "pushConfigsPerTask",
        bound,
        principal.tenant,
        `task ${taskId} holds the most push notification configs it may (delete one or reuse an id)`,
        60,
      ),
    );
  }

  /** Each tenant's usage on this instance, with the limits its callers meet (without a key's own entry). */
  view(): Array<TenantUsageView & { limits: Partial<Record<LimitName, number>> }> {
    return this.usage.view().map((row) => ({
      ...row,
      limits: Object.fromEntries(Object.entries(this.resolution.ofTenant(row.tenant)).map(([n, b]) => [n, b.value])),
    }));
  }

  private async holdRunningPlace(principal: Principal, running: BoundLimit, store: TenantUsageStore) {
    const tenant = principal.tenant;
    if (running.value === 0)
      throw this.refused(principal, "runningTasks", limitRefusal("runningTasks", running, tenant, "", 0));
    const holdId = randomUUID();
    // A place outlives a creator that died by the lease TTL at most: then the count forgets it.
    const counted = await store.holdRunningTask(tenant, holdId, new Date(this.clock() + this.options.ttlMs));
    const release = () => void store.releaseRunningTask(holdId).catch(() => undefined);
    if (counted > running.value) {
      release();
      throw this.refused(
        principal,
        "runningTasks",
        limitRefusal("runningTasks", running, tenant, unfinished(counted - 1), COUNT_RETRY_SECONDS),
      );
    }
    this.usage.task(tenant, counted);
    return release;
  }

  /** 0 when the bucket gave a token; else the seconds until it will (Infinity → never: a limit of 0). */
  private take(kind: string, bound: BoundLimit, perSecond: number, capacity: number): number {
    if (bound.value === 0) return Number.POSITIVE_INFINITY;
    return this.bucketOf(kind, bound, capacity).take(this.clock(), perSecond / this.instances, this.share(capacity));
  }

  /** The bucket of one kind of limit for what `bound` counts against; a new one starts full. */
  private bucketOf(kind: string, bound: BoundLimit, capacity: number): TokenBucket {
    const id = `${kind}\u0000${bound.bucket}`;
    let bucket = this.buckets.get(id);
    if (!bucket) this.buckets.set(id, (bucket = new TokenBucket(this.share(capacity), this.clock())));
    return bucket;
  }

  /** This instance's share of a capacity: 1/N of it, at least one token (else a small burst would admit nothing). */
  private share(capacity: number): number {
    return Math.max(1, capacity / this.instances);
  }

  private refused(principal: Principal, reason: RefusalReason, err: Error): Error {
    this.usage.refused(principal.tenant, reason);
    this.options.onRefusal?.(this.usage.labelOf(principal.tenant), reason);
    return err;
  }
}

/**
 * The authenticator every binding asks, charging each call it admits to its caller's request rate: a call over it
 * is refused right after authentication, before its body is read or anything is looked up.
 */
export function chargingAuthenticator(authenticator: Authenticator, limits: TenantLimits): Authenticator {
  const charge = (principal: Principal): Principal => {
    limits.chargeRequest(principal);
    return principal;
  };
  // Without a requestsPerSecond anywhere there is nothing to charge: the authenticator as it is.
  if (!limits.chargesRequests) return authenticator;
  const authenticate: Authenticator["authenticate"] = (request) => {
    const answer = authenticator.authenticate(request);
    return answer instanceof Promise ? answer.then(charge) : charge(answer);
  };
  return new Proxy(authenticator, {
    get(target, property) {
      if (property === "authenticate") return authenticate;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function unfinished(count: number): string {
  return `${count} unfinished task${count === 1 ? "" : "s"}`;
}

/** Whether any entry sets one of `names` to a number (not unlimited). */
function setsAny(settings: TenantLimitSettings, names: readonly LimitName[]): boolean {
  const entries = [settings.default, ...Object.values(settings.tenants), ...Object.values(settings.keys)];
  return entries.some((entry) => names.some((name) => typeof entry[name] === "number"));
}

export type { BoundLimits };
