// The peer callback key is a key of its own (A2A_PEER_CALLBACK_KEY, or a dev key generated once under DATA_DIR):
// rotating the push keys leaves the callback tokens handed to peers valid, and production never runs without it.
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { CallContext } from "../../src/auth/call-context.js";
import { loadConfig } from "../../src/config/config.js";
import { ConfigError } from "../../src/domain/env-settings.js";
import { loadPeerCallbackKey, PEER_CALLBACK_KEY_FILE } from "../../src/peer/peer-callback-key.js";
import { PeerCallbackKey } from "../../src/peer/peer-callbacks.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import type { A2AInvokeServices } from "../../src/engine/nodes/a2a-invoke/a2a-invoke-node.js";
import type { PeerCallbackService } from "../../src/engine/nodes/a2a-invoke/peer-callback-service.js";
import { startTestCore, type TestCore } from "../support/start-core.js";

const ctx: CallContext = { principal: { tenant: "default", id: "alice", scopes: "*" } };
const key256 = () => randomBytes(32).toString("base64");

describe("the peer callback key", () => {
  let t: TestCore | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });
  /** The a2a.invoke kind's receiver of peers' pushes, as this core built it. */
  const receiver = (): PeerCallbackService => (t!.core.nodeServices["a2a.invoke"] as A2AInvokeServices).peerCallbacks!;

  it("outside production it is generated once under DATA_DIR (0600) and read back the same; configured wins; production refuses to run without it", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "peer-callback-key-"));
    const first = await loadPeerCallbackKey({ dataDir, production: false });
    const again = await loadPeerCallbackKey({ dataDir, production: false });
    expect(first.key.reveal()).toHaveLength(32);
    expect(again.key.reveal().equals(first.key.reveal())).toBe(true);
    const path = join(dataDir, PEER_CALLBACK_KEY_FILE);
    expect(first.source).toBe(path);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, "utf8")).toContain(first.key.reveal().toString("base64"));
    const configured = loadConfig({ A2A_PEER_CALLBACK_KEY: key256() }).a2aPeer.callbackKey!;
    expect((await loadPeerCallbackKey({ configured, dataDir, production: false })).key).toBe(configured);
    await expect(loadPeerCallbackKey({ dataDir, production: true })).rejects.toThrow("A2A_PEER_CALLBACK_KEY");
  });

  it("config: a malformed key is refused without echoing it; production with A2A_PEER_PUSH on needs it, and names A2A_PEER_PUSH=false as the way out", () => {
    const bad = "not-a-key-but-a-secret-0123";
    let problem: unknown;
    try {
      loadConfig({ A2A_PEER_CALLBACK_KEY: bad });
    } catch (err) {
      problem = err;
    }
    expect(problem).toBeInstanceOf(ConfigError);
    expect((problem as Error).message).toContain("A2A_PEER_CALLBACK_KEY must be a 256-bit key");
    expect((problem as Error).message).not.toContain(bad);
    const production = { NODE_ENV: "production", AUTH: "off" };
    expect(() => loadConfig(production)).toThrow(
      /A2A_PEER_PUSH on needs A2A_PEER_CALLBACK_KEY .*or A2A_PEER_PUSH=false/,
    );
    const problems = (fn: () => unknown) => {
      try {
        fn();
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(
      problems(() => loadConfig({ ...production, A2A_PEER_PUSH: "false" })).filter((p) =>
        p.includes("A2A_PEER_CALLBACK_KEY"),
      ),
    ).toEqual([]);
    expect(
      problems(() => loadConfig({ ...production, A2A_PEER_CALLBACK_KEY: key256() })).filter((p) =>
        p.includes("A2A_PEER_CALLBACK_KEY"),
      ),
    ).toEqual([]);
  });

  it("rotating PUSH_ENCRYPTION_KEY does not invalidate a callback token minted before (the receiver of the host restarted with the new push key still takes it)", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "peer-callback-rotate-"));
    const store = new MemoryTaskStore();
    const oldPushKey = key256();
    const env = {
      DATA_DIR: dataDir,
      PUSH_SIGNING_KEY: randomBytes(32).toString("base64url"),
      BLOCKING_TIMEOUT_MS: "10000",
    };
    t = await startTestCore({ ...env, PUSH_ENCRYPTION_KEY: oldPushKey }, { store });
    const task = await t.core.service.sendMessage(
      {
        message: {
          messageId: randomUUID(),
          role: "user",
          parts: [{ kind: "text", text: "hi" }],
          metadata: { skillId: "echo" },
        },
        blocking: true,
      },
      ctx,
    );
    expect(task.status.state).toBe("completed");
    // The token of the task's (finished) echo visit, minted under the key this host generated under DATA_DIR.
    const { key } = await loadPeerCallbackKey({ dataDir, production: false });
    const token = new PeerCallbackKey(key).tokenFor(task.id, `${task.id}:echo:1`);
    const push = { taskId: task.id, headers: { "x-a2a-notification-token": token }, body: "{}" };
    expect(await receiver().receive(push)).toEqual({ status: 200, outcome: "moved-on" });
    await t.close();

    t = await startTestCore(
      { ...env, PUSH_ENCRYPTION_KEY: key256(), PUSH_ENCRYPTION_KEY_PREVIOUS: oldPushKey },
      { store },
    );
    expect(await receiver().receive(push)).toEqual({ status: 200, outcome: "moved-on" });
    const forged = new PeerCallbackKey(loadConfig({ A2A_PEER_CALLBACK_KEY: key256() }).a2aPeer.callbackKey!).tokenFor(
      task.id,
      `${task.id}:echo:1`,
    );
    expect(await receiver().receive({ ...push, headers: { "x-a2a-notification-token": forged } })).toEqual({
      status: 401,
      outcome: "unauthenticated",
    });
  });
});
