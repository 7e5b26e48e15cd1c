import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { SecretValue } from "../../src/secrets/secret-value.js";
import { checkPushForProduction, loadPushSettings } from "../../src/push/push-settings.js";
import { CircuitBreakers } from "../../src/push/circuit-breaker.js";
import { artifactRefsUpTo } from "../../src/push/push-artifact-refs.js";
import { v03PushBody } from "../../src/a2a/v03/v03-push-body.js";
import { PUSH_KEY_FILE, resolvePushKeys } from "../../src/push/push-keys.js";
import { PushSecretBox, secretsAad } from "../../src/push/push-secrets.js";
import { signPushBody, verifyPushSignature } from "../../src/push/push-signature.js";
import { backoffDelay, giveUpReason } from "../../src/domain/retry-policy.js";
import type { RunEvent } from "../../src/domain/task-record.js";

const key = () => new SecretValue(randomBytes(32));

describe("push secrets (AES-256-GCM)", () => {
  it("round-trips, binds the ciphertext to its config, and opens with a previous key after rotation", () => {
    const oldKey = key();
    const box = new PushSecretBox(oldKey);
    const aad = secretsAad("t1", "task-1", "c1");
    const sealed = box.seal({ token: "tok", credentials: "cred" }, aad);
    expect(JSON.stringify(sealed)).not.toContain("tok");
    expect(box.open(sealed, aad)).toEqual({ token: "tok", credentials: "cred" });
    expect(() => box.open(sealed, secretsAad("t2", "task-1", "c1"))).toThrow(/failed authentication/);
    expect(() => box.open({ ...sealed, data: Buffer.from("tampered").toString("base64") }, aad)).toThrow(
      /failed authentication/,
    );
    const rotated = new PushSecretBox(key(), [oldKey]);
    expect(rotated.open(sealed, aad)).toEqual({ token: "tok", credentials: "cred" });
    expect(() => new PushSecretBox(key()).open(sealed, aad)).toThrow(/not configured/);
  });

  it("fingerprints are salted digests of 32 hex characters, stable per key", () => {
    const k = key();
    const a = new PushSecretBox(k).fingerprint("secret-token");
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(new PushSecretBox(k).fingerprint("secret-token")).toBe(a);
    expect(new PushSecretBox(key()).fingerprint("secret-token")).not.toBe(a);
  });

  it("a configured key never prints", () => {
    const secret = new SecretValue("super-secret-signing-key-0123456789");
    expect(JSON.stringify({ secret })).toBe('{"secret":"[redacted]"}');
    expect(`${secret}`).toBe("[redacted]");
    expect(inspect({ secret })).not.toContain("super-secret");
  });
});

describe("push signature", () => {
  it("is HMAC-SHA256 over `${timestamp}.${body}`, checked in constant time within ±5 minutes", () => {
    const signingKey = "k".repeat(32);
    const body = '{"kind":"status-update"}';
    const ts = 1_700_000_000;
    const signature = signPushBody(signingKey, ts, body);
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    const ok = { key: signingKey, body, timestamp: String(ts), signature, nowSeconds: ts + 10 };
    expect(verifyPushSignature(ok)).toBe(true);
    expect(verifyPushSignature({ ...ok, body: `${body} ` })).toBe(false);
    expect(verifyPushSignature({ ...ok, timestamp: String(ts + 1) })).toBe(false);
    expect(verifyPushSignature({ ...ok, nowSeconds: ts + 301 })).toBe(false);
    expect(verifyPushSignature({ ...ok, signature: undefined })).toBe(false);
  });
});

describe("retry policy and circuit breaker", () => {
  const policy = { baseMs: 100, maxMs: 1_000, maxAttempts: 4, maxAgeMs: 60_000 };

  it("backs off exponentially with jitter, capped", () => {
    expect(backoffDelay(policy, 1, () => 0)).toBe(50);
    expect(backoffDelay(policy, 1, () => 1)).toBe(100);
    expect(backoffDelay(policy, 3, () => 1)).toBe(400);
    expect(backoffDelay(policy, 30, () => 1)).toBe(1_000);
    expect(backoffDelay(policy, 30, () => 0)).toBe(500);
  });

  it("gives up on a non-retryable failure, after max attempts, or past the max age", () => {
    const now = Date.now();
    const fresh = { firstAt: now, now };
    // The failure says whether it may succeed later (a push result, a PeerCallError).
    expect(giveUpReason(policy, { retryable: false }, 1, fresh)).toBe("not-retryable");
    expect(giveUpReason(policy, { retryable: true }, 3, fresh)).toBeUndefined();
    expect(giveUpReason(policy, { retryable: true }, 4, fresh)).toBe("max-attempts");
    expect(giveUpReason(policy, { retryable: true }, 1, { firstAt: now - 60_000, now })).toBe("max-age");
  });

  it("opens per origin after consecutive failures, lets one probe through after the cool-down, and re-opens for one cool-down on a failed probe", () => {
    let now = 0;
    const breakers = new CircuitBreakers({ threshold: 2, cooldownMs: 100, clock: () => now });
    breakers.failure("https://a", false);
    expect(breakers.allow("https://a")).toEqual({ allowed: true, probe: false });
    breakers.failure("https://a", false);
    expect(breakers.allow("https://a")).toEqual({ allowed: false, retryAt: 100 });
    expect(breakers.allow("https://b")).toEqual({ allowed: true, probe: false });
    now = 100;
    expect(breakers.allow("https://a")).toEqual({ allowed: true, probe: true });
    expect(breakers.allow("https://a").allowed).toBe(false); // one probe at a time
    now = 110;
    breakers.failure("https://a", true);
    expect(breakers.allow("https://a")).toEqual({ allowed: false, retryAt: 210 }); // one cool-down, not a doubled one
    expect(breakers.openings("https://a")).toBe(2);
    now = 210;
    expect(breakers.allow("https://a")).toEqual({ allowed: true, probe: true });
    breakers.success("https://a");
    expect(breakers.isOpen("https://a")).toBe(false);
    expect(breakers.allow("https://a")).toEqual({ allowed: true, probe: false });
  });

  it("counts one opening per failed probe: attempts in flight when it opened do not re-open or extend it", () => {
    let now = 0;
    const breakers = new CircuitBreakers({ threshold: 2, cooldownMs: 100, clock: () => now });
    // Ten attempts start while the origin is still closed; the receiver is down for all of them.
    const inFlight = Array.from({ length: 10 }, () => breakers.allow("https://a"));
    expect(inFlight.every((d) => d.allowed && !d.probe)).toBe(true);
    for (let i = 0; i < 10; i++) {
      now = i * 5;
      breakers.failure("https://a", false);
    }
    // Opened once, at the second failure (t=5); the eight late failures changed nothing.
    expect(breakers.openings("https://a")).toBe(1);
    expect(breakers.allow("https://a")).toEqual({ allowed: false, retryAt: 105 });
    // A failed probe is one more opening, and the next probe is one cool-down away.
    now = 105;
    const probe = breakers.allow("https://a");
    expect(probe).toEqual({ allowed: true, probe: true });
    breakers.failure("https://a", false); // a straggler failing while the probe is out
    expect(breakers.openings("https://a")).toBe(1);
    breakers.failure("https://a", true);
    expect(breakers.openings("https://a")).toBe(2);
    expect(breakers.allow("https://a")).toEqual({ allowed: false, retryAt: 205 });
    // A probe that ends without a verdict (egress refusal) frees the half-open slot.
    now = 205;
    expect(breakers.allow("https://a")).toEqual({ allowed: true, probe: true });
    breakers.release("https://a", true);
    expect(breakers.allow("https://a")).toEqual({ allowed: true, probe: true });
  });
});

describe("push body", () => {
  const event = (sequence: number, extra: Partial<RunEvent>): RunEvent => ({
    eventId: `t1:${sequence}`,
    runId: "t1",
    type: "x",
    payload: { inputs: { secret: "run input" } },
    timestamp: "2026-01-01T00:00:00.000Z",
    sequence,
    ...extra,
  });

  it("is a content-free v0.3 TaskStatusUpdateEvent with artifact references", () => {
    const log = [
      event(0, {
        a2a: { artifact: { artifactId: "a1", name: "proposal", parts: [{ kind: "text", text: "artifact content" }] } },
      }),
      event(1, {
        a2a: {
          status: {
            state: "failed",
            timestamp: "2026-01-01T00:00:01.000Z",
            message: { messageId: "m", role: "agent", parts: [{ kind: "text", text: "status text" }] },
          },
          metadata: {
            openwop: {
              runId: "t1",
              status: "failed",
              error: { code: "handler_failed", message: "internal detail" },
              interrupt: { kind: "approval", nodeId: "gate", interruptId: "i1", data: { title: "x" } },
            },
          },
        },
      }),
      event(2, { a2a: { artifact: { artifactId: "a2", parts: [] } } }),
    ];
    const body = JSON.parse(
      v03PushBody.encode({ taskId: "t1", contextId: "c1" }, log[1]!, artifactRefsUpTo(log, 1)),
    ) as Record<string, any>;
    expect(body).toEqual({
      kind: "status-update",
      taskId: "t1",
      contextId: "c1",
      status: { state: "failed", timestamp: "2026-01-01T00:00:01.000Z" },
      final: true,
      metadata: {
        openwop: {
          runId: "t1",
          eventId: "t1:1",
          sequence: 1,
          status: "failed",
          interrupt: { kind: "approval", nodeId: "gate", interruptId: "i1" },
          error: { code: "handler_failed" },
          artifacts: [{ artifactId: "a1", name: "proposal" }],
        },
      },
    });
    for (const leaked of ["artifact content", "status text", "internal detail", "run input", '"title"'])
      expect(JSON.stringify(body)).not.toContain(leaked);
  });
});

describe("push configuration", () => {
  const base = { PORT: "0" };

  it("refuses the test-only loopback allowance, the ephemeral-key flag and missing keys in production", () => {
    const keys = { PUSH_ENCRYPTION_KEY: randomBytes(32).toString("base64"), PUSH_SIGNING_KEY: "s".repeat(40) };
    const production = (env: Record<string, string>) => () => checkPushForProduction(loadPushSettings(env));
    expect(production({ ...keys, PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true" })).toThrow(/test-only/);
    expect(production({ ...keys, PUSH_INSECURE_EPHEMERAL_KEYS: "true" })).toThrow(/dev-only/);
    expect(production({ PUSH_SIGNING_KEY: keys.PUSH_SIGNING_KEY })).toThrow(/PUSH_ENCRYPTION_KEY/);
    expect(production({ PUSH_ENCRYPTION_KEY: keys.PUSH_ENCRYPTION_KEY })).toThrow(/PUSH_SIGNING_KEY/);
    expect(production({ PUSH_ENABLED: "false" })).not.toThrow();
    expect(production(keys)).not.toThrow();
    // Outside production the allowance is accepted (tests), and keys may come from DATA_DIR.
    expect(
      loadConfig({ NODE_ENV: "test", PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true" }).push.egress.allowHttpLoopback,
    ).toBe(true);
  });

  it("validates keys, ports and host lists without echoing a key", () => {
    expect(() => loadConfig({ ...base, PUSH_ENCRYPTION_KEY: "too-short-secret" })).toThrow(ConfigError);
    try {
      loadConfig({ ...base, PUSH_ENCRYPTION_KEY: "too-short-secret" });
    } catch (err) {
      expect((err as Error).message).not.toContain("too-short-secret");
    }
    expect(loadConfig({ ...base, PUSH_ENCRYPTION_KEY: "ab".repeat(32) }).push.encryptionKey?.reveal()).toHaveLength(32);
    expect(() => loadConfig({ ...base, PUSH_SIGNING_KEY: "short" })).toThrow(/at least 32/);
    expect(() => loadConfig({ ...base, PUSH_ALLOWED_PORTS: "443,abc" })).toThrow(/PUSH_ALLOWED_PORTS/);
    expect(() => loadConfig({ ...base, PUSH_DENY_HOSTS: "bad host!" })).toThrow(/PUSH_DENY_HOSTS/);
    expect(() => loadConfig({ ...base, PUSH_ALLOW_HOSTS: "*.*.example.com" })).toThrow(/PUSH_ALLOW_HOSTS/);
    expect(
      loadConfig({ ...base, PUSH_ALLOW_HOSTS: "*.example.com, 203.0.113.0/24", PUSH_ALLOWED_PORTS: "8443" }).push
        .egress,
    ).toMatchObject({
      allowHosts: ["*.example.com", "203.0.113.0/24"],
      allowedPorts: [8443],
      allowHttpLoopback: false,
    });
  });

  it("without configured keys, generates them once under DATA_DIR (0600) and reuses them; refuses an unusable DATA_DIR unless the dev flag asks for ephemeral keys", async () => {
    const dir = await mkdtemp(join(tmpdir(), "push-keys-"));
    const settings = loadConfig({ ...base, DATA_DIR: dir }).push;
    const [a, b] = await Promise.all([resolvePushKeys(settings, dir), resolvePushKeys(settings, dir)]);
    expect(a.source).toBe("data directory");
    expect(a.encryptionKey.reveal().equals(b.encryptionKey.reveal())).toBe(true);
    expect(a.signingKey.reveal()).toBe(b.signingKey.reveal());
    const again = await resolvePushKeys(settings, dir);
    expect(again.encryptionKey.reveal().equals(a.encryptionKey.reveal())).toBe(true);
    expect((await stat(join(dir, PUSH_KEY_FILE))).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(join(dir, PUSH_KEY_FILE), "utf8"))).toMatchObject({ version: 1 });

    const blocked = join(dir, "not-a-dir");
    await writeFile(blocked, "x");
    await expect(resolvePushKeys(settings, blocked)).rejects.toThrow(ConfigError);
    const ephemeral = await resolvePushKeys(
      loadConfig({ ...base, PUSH_INSECURE_EPHEMERAL_KEYS: "true" }).push,
      blocked,
    );
    expect(ephemeral.source).toMatch(/ephemeral/);
  });
});
