import type { Logger } from "../observability/logger.js";
import type { SecretValue } from "../secrets/secret-value.js";
import type { DeadLetterReason, PushConfigRecord, PushConfigStore } from "../store/push-config-store.js";
import type { RunEvent, TaskRecord } from "../domain/task-record.js";
import { CircuitBreakers } from "./circuit-breaker.js";
import { artifactRefsUpTo } from "./push-artifact-refs.js";
import { wantsBearer, type PushJwtSigner } from "./push-jwt.js";
import type { PushHttpClient, PushResult } from "./push-http-client.js";
import type { PushBodyEncoders } from "./push-ports.js";
import { secretsAad, type PushSecretBox, type PushSecrets } from "./push-secrets.js";
import {
  EVENT_ID_HEADER,
  NOTIFICATION_TOKEN_HEADER,
  SIGNATURE_HEADER,
  signPushBody,
  TIMESTAMP_HEADER,
} from "./push-signature.js";

export interface WebhookAttemptsOptions {
  configs: Pick<PushConfigStore, "addDeadLetter">;
  bodies: PushBodyEncoders;
  client: PushHttpClient;
  secrets: PushSecretBox;
  signingKey: SecretValue<string>;
  /** Signs the Bearer JWT of configs that ask for Bearer without credentials. */
  jwt: PushJwtSigner;
  logger: Logger;
  timeoutMs: number;
  breaker: { threshold: number; cooldownMs: number };
  /** How long a dead letter is kept (the task retention). */
  retentionMs: number;
  clock: () => Date;
}

/**
 * One push attempt as the delivery worker makes it: the body in the config's A2A version, signed, with the
 * config's token and credentials, behind a circuit breaker per webhook origin; and the dead letter of a
 * push given up on.
 */
export class WebhookAttempts {
  private readonly breakers: CircuitBreakers;
  private readonly clock: () => Date;

  constructor(private readonly options: WebhookAttemptsOptions) {
    this.clock = options.clock;
    this.breakers = new CircuitBreakers({ ...options.breaker, clock: () => this.clock().getTime() });
  }

  /** One POST, unless the origin's breaker is open. */
  async attempt(
    config: PushConfigRecord,
    task: TaskRecord,
    event: RunEvent,
    log: RunEvent[],
  ): Promise<{ kind: "blocked"; retryAt: number } | { kind: "sent"; result: PushResult }> {
    const origin = originOf(config.url);
    const gate = this.breakers.allow(origin);
    if (!gate.allowed) return { kind: "blocked", retryAt: gate.retryAt };

    let secrets: PushSecrets = {};
    if (config.sealed) {
      try {
        secrets = this.options.secrets.open(config.sealed, secretsAad(config.tenant, config.taskId, config.configId));
      } catch (err) {
        this.breakers.release(origin, gate.probe);
        this.options.logger.error(
          { err, taskId: config.taskId, configId: config.configId },
          "push: the config's secrets cannot be decrypted (check PUSH_ENCRYPTION_KEY)",
        );
        return {
          kind: "sent",
          result: {
            ok: false,
            retryable: true,
            error: "push secrets cannot be decrypted with the configured keys",
            durationMs: 0,
          },
        };
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
    // Bearer without credentials: the host signs a JWT per attempt (a fresh jti; the receiver checks it against the JWKS).
    else if (wantsBearer(config.schemes))
      headers["Authorization"] =
        `Bearer ${await this.options.jwt.sign({ audience: config.url, taskId: config.taskId, body, nowSeconds: timestamp })}`;

    const result = await this.options.client.post({
      url: config.url,
      body,
      headers,
      timeoutMs: this.options.timeoutMs,
    });
    if (result.ok || (result.status !== undefined && !result.retryable)) this.breakers.success(origin);
    else if (result.retryable) this.breakers.failure(origin, gate.probe);
    else this.breakers.release(origin, gate.probe);
    this.options.logger.debug(
      {
        taskId: config.taskId,
        configId: config.configId,
        eventId: event.eventId,
        status: result.status,
        ok: result.ok,
        durationMs: result.durationMs,
      },
      "push: attempt",
    );
    return { kind: "sent", result };
  }

  async deadLetter(
    config: PushConfigRecord,
    event: RunEvent,
    state: string,
    reason: DeadLetterReason,
    attempts: number,
    lastError: string,
  ): Promise<void> {
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
    this.options.logger.warn(
      { taskId: config.taskId, configId: config.configId, eventId: event.eventId, target, reason, attempts, lastError },
      "push: given up; dead letter recorded",
    );
  }
}

/** `${state}|${interruptId}` of an event's status: what makes two statuses the same transition for push. */
export function statusKeyOf(event: RunEvent, state: string): string {
  return `${state}|${interruptIdOf(event) ?? ""}`;
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
