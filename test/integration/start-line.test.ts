// The start-up line says where the host listens, as bound (scheme, address, port), whether it speaks TLS (h2
// by ALPN) or cleartext (h2c), and the public URL beside it only when PUBLIC_URL is set to another address:
// behind a proxy, PUBLIC_URL is not where the process listens (issue 38).
import { Agent, request } from "undici";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { launchHost, type RunningHost } from "../../src/start-host.js";
import { freePort } from "../support/server-process.js";
import { TestCertificates } from "../support/test-certificates.js";

const BASE = { STORE: "memory", PORT: "0", HOST: "127.0.0.1", CONFORMANCE_SEAMS: "false", LOG_LEVEL: "info" };

async function start(env: Record<string, string>): Promise<{ host: RunningHost; line: string }> {
  const lines: Array<{ msg: string }> = [];
  const logger = createLogger("info", {
    write: (text: string) => void lines.push(JSON.parse(text) as { msg: string }),
  });
  const host = await launchHost({}, { ...BASE, ...env }, logger);
  const line = lines.find((l) => l.msg.startsWith("openwop-a2a-host listening on"))?.msg;
  if (!line) {
    await host.close();
    throw new Error(`no start-up line in ${JSON.stringify(lines)}`);
  }
  return { host, line };
}

const certs = new TestCertificates();
afterAll(() => certs.remove());

describe("the start-up line", () => {
  it("cleartext, no PUBLIC_URL: the bound address with h2c, no public URL", async () => {
    const { host, line } = await start({});
    try {
      expect(line).toMatch(
        new RegExp(
          `^openwop-a2a-host listening on http://127\\.0\\.0\\.1:${host.port} \\(cleartext: HTTP/1\\.1 \\+ h2c\\) — A2A JSON-RPC`,
        ),
      );
      expect(line).not.toContain("public URL");
      expect(host.url).toBe(`http://127.0.0.1:${host.port}`);
    } finally {
      await host.close();
    }
  });

  it("TLS with PUBLIC_URL elsewhere (a proxy's address): https and h2 where it listens, the public URL beside it", async () => {
    const ca = certs.ca("start-line-ca");
    const server = certs.leaf("start-line-server", ca, "/CN=localhost", { san: "DNS:localhost,IP:127.0.0.1" });
    const { host, line } = await start({
      TLS_CERT_FILE: server.certFile,
      TLS_KEY_FILE: server.keyFile,
      PUBLIC_URL: "https://agents.example.com",
    });
    const dispatcher = new Agent({ connect: { ca: ca.cert } });
    try {
      expect(line).toMatch(
        new RegExp(
          `^openwop-a2a-host listening on https://127\\.0\\.0\\.1:${host.port} \\(TLS: HTTP/1\\.1 \\+ h2\\), public URL https://agents\\.example\\.com — A2A JSON-RPC`,
        ),
      );
      expect(line).not.toContain("h2c");
      // RunningHost.url is where it listens too, in the scheme it speaks.
      expect(host.url).toBe(`https://127.0.0.1:${host.port}`);
      expect(host.publicUrl).toBe("https://agents.example.com");
      expect((await request(`${host.url}/healthz`, { dispatcher })).statusCode).toBe(200);
    } finally {
      await dispatcher.close();
      await host.close();
    }
  });

  it("PUBLIC_URL equal to the listening address is not said twice", async () => {
    const port = await freePort();
    const { host, line } = await start({ PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` });
    try {
      expect(line).toMatch(
        new RegExp(
          `^openwop-a2a-host listening on http://127\\.0\\.0\\.1:${port} \\(cleartext: HTTP/1\\.1 \\+ h2c\\) — `,
        ),
      );
      expect(line).not.toContain("public URL");
    } finally {
      await host.close();
    }
  });
});
