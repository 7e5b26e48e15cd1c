// The push worker looks up push configs only for tasks that have some: with push on (the default), a task
// without configs costs no push-store command per commit.
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import type { Message } from "../../src/domain/a2a-types.js";
import { MemoryPushConfigStore } from "../../src/store/memory-push-config-store.js";
import type { PushConfigRecord } from "../../src/store/push-config-store.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

class CountingConfigs extends MemoryPushConfigStore {
  readonly listed: string[] = [];
  override async list(taskId: string): Promise<PushConfigRecord[]> {
    this.listed.push(taskId);
    return super.list(taskId);
  }
}

const ctx: CallContext = { principal: { tenant: "default", id: "tester", scopes: "*" } };
const message = (): Message => ({
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text: "hello" }],
  metadata: { skillId: "echo" },
});

describe("push config lookups", () => {
  let t: TestCore | undefined;
  afterEach(async () => t?.close());

  it("a task without push configs is never looked up; one with a config is, on its commits", async () => {
    const configs = new CountingConfigs();
    t = await startTestCore(
      {
        PUSH_INSECURE_EPHEMERAL_KEYS: "true",
        PUSH_ALLOW_INSECURE_LOOPBACK_FOR_TESTS: "true",
        PUSH_RETRY_BASE_MS: "60000",
        PUSH_RETRY_MAX_MS: "60000",
      },
      { pushConfigs: configs },
    );
    expect(t.core.push.enabled).toBe(true);

    const plain = await t.core.service.sendMessage({ message: message(), blocking: true }, ctx);
    expect(plain.status.state).toBe("completed");
    expect(configs.listed).not.toContain(plain.id);

    const pushed = await t.core.service.sendMessage(
      { message: message(), blocking: true, pushNotificationConfig: { url: "http://127.0.0.1:9/hook" } },
      ctx,
    );
    expect(pushed.status.state).toBe("completed");
    await expect.poll(() => configs.listed.includes(pushed.id)).toBe(true);
  });
});
