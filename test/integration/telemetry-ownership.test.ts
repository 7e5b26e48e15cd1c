// Telemetry is shut down by whoever creates it, once (docs/architecture.md "Wiring"): an app or core handed one
// never shuts it down, on close or on a failed start; its creator (startHost, a test) does.
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { loadConfig } from "../../src/config/config.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTelemetry, type Telemetry } from "../../src/observability/telemetry.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { freePort } from "../support/server-process.js";

/** The real telemetry, with its shutdowns counted. */
async function countedTelemetry(): Promise<{ telemetry: Telemetry; shutdowns: () => number }> {
  const real = await createTelemetry();
  let count = 0;
  const telemetry: Telemetry = {
    ...real,
    shutdown() {
      count++;
      return real.shutdown();
    },
  };
  return { telemetry, shutdowns: () => count };
}

describe("telemetry handed to the app", () => {
  it("is not shut down by the app's close: the caller that made it does that", async () => {
    const { telemetry, shutdowns } = await countedTelemetry();
    const port = await freePort();
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "silent",
      PUSH_ENABLED: "false",
    });
    const app = await createApp({
      config,
      logger: createLogger("silent"),
      store: new MemoryTaskStore(),
      durableStore: false,
      telemetry,
    });
    await app.listen();
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    await app.close();
    expect(shutdowns()).toBe(0);
    await telemetry.shutdown();
    expect(shutdowns()).toBe(1);
  });

  it("is not shut down by a start that fails", async () => {
    const { telemetry, shutdowns } = await countedTelemetry();
    const config = loadConfig({ LOG_LEVEL: "silent", PUSH_ENABLED: "false" });
    // A store that cannot open its commit feed: the start fails after core began building.
    const store = Object.assign(new MemoryTaskStore(), {
      openCommitFeed: () => Promise.reject(new Error("feed refused")),
    });
    await expect(
      createApp({ config, logger: createLogger("silent"), store, durableStore: false, telemetry }),
    ).rejects.toThrow("feed refused");
    expect(shutdowns()).toBe(0);
    await telemetry.shutdown();
  });
});
