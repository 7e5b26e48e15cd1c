// The agent card is built once, in core (phase 4 of core.ts): the interfaces and ways in the caller hands over,
// the OpenWOP extension, and nothing patched afterwards by the HTTP layer.
import { afterEach, describe, expect, it } from "vitest";
import { OPENWOP_EXTENSION_URI } from "../../src/a2a/openwop-extension.js";
import { loadAuthSettings } from "../../src/auth/auth-settings.js";
import { hostAuthenticator } from "../../src/auth/host-authenticator.js";
import { loadConfig } from "../../src/config/config.js";
import { createCore, type CoreOptions } from "../../src/core.js";
import { createLogger } from "../../src/observability/logger.js";
import { createTelemetry, type Telemetry } from "../../src/observability/telemetry.js";
import { MemoryTaskStore } from "../../src/store/memory-task-store.js";
import { hostInterfaces, JSONRPC_PATH } from "../../src/transport/interface-urls.js";

const PUBLIC_URL = "https://agent.example:8443";
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function cardOf(auth?: CoreOptions["auth"]) {
  const config = loadConfig({ LOG_LEVEL: "silent", PUSH_ENABLED: "false", PUBLIC_URL });
  const telemetry: Telemetry = await createTelemetry();
  const core = await createCore({
    config,
    logger: createLogger("silent"),
    telemetry,
    store: new MemoryTaskStore(),
    interfaces: hostInterfaces(config.publicUrl),
    ...(auth ? { auth } : {}),
  });
  stops.push(async () => {
    await core.stop();
    await telemetry.shutdown();
  });
  return core.card;
}

describe("the card core builds", () => {
  it("lists the interfaces it was handed (JSON-RPC preferred, gRPC as host:port) and the OpenWOP extension", async () => {
    const card = await cardOf();
    expect(card.url).toBe(`${PUBLIC_URL}${JSONRPC_PATH}`);
    expect(card.additionalInterfaces).toEqual([
      { url: `${PUBLIC_URL}${JSONRPC_PATH}`, transport: "JSONRPC" },
      { url: "agent.example:8443", transport: "GRPC" },
      { url: PUBLIC_URL, transport: "HTTP+JSON" },
    ]);
    expect(card.capabilities.extensions).toEqual([
      expect.objectContaining({ uri: OPENWOP_EXTENSION_URI, required: false }),
    ]);
    expect(card.securitySchemes).toBeUndefined();
    expect(card.security).toBeUndefined();
  });

  it("declares the ways in the authenticator describes", async () => {
    const settings = loadAuthSettings(
      {
        API_KEYS: JSON.stringify([
          { id: "k", tenant: "acme", scopes: ["runs:read"], key: "core-card-key-0123456789abcdef" },
        ]),
      },
      false,
    );
    if (Array.isArray(settings)) throw new Error(settings.join("; "));
    const card = await cardOf(hostAuthenticator(settings).describe());
    expect(card.securitySchemes).toEqual({ apiKey: expect.objectContaining({ type: "http", scheme: "bearer" }) });
    expect(card.security).toEqual([{ apiKey: [] }]);
  });
});
