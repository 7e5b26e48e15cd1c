// The egress guard with an operator's private services (HTTP_NODE_PRIVATE_HOSTS): host:port and cidr:port entries
// open exactly those targets (plain http and private addresses allowed), everything else private stays refused,
// and every refusal names the setting that would allow the target. DNS is a fake zone (the guard's resolver seam).
import { describe, expect, it } from "vitest";
import {
  checkEgressUrl,
  EgressRefusedError,
  type EgressPolicy,
  type ResolvedAddress,
  type Resolver,
} from "../../src/egress/egress-guard.js";
import { loadConfig } from "../../src/config/config.js";
import { loadHttpNodeSettings, type HttpNodeSettings } from "../../src/engine/nodes/node-egress-settings.js";

const ZONE: Record<string, string[]> = {
  sidecar: ["127.0.0.1"],
  "billing.svc.cluster.local": ["10.20.0.7"],
  "ledger.corp.example.com": ["10.1.2.3"],
  "split.corp.example.com": ["10.1.2.3", "93.184.216.34"],
  "other-private.corp.example.com": ["192.168.4.4"],
  "api.example.com": ["93.184.216.34"],
  "sneaky.corp.example.com": ["169.254.169.254"],
  "ula.corp.example.com": ["fd12:3456::7"],
};
const resolve: Resolver = async (name) => {
  const answers = ZONE[name];
  if (!answers) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
  return answers.map((address): ResolvedAddress => ({ address, family: address.includes(":") ? 6 : 4 }));
};

/** The policy exactly as the host builds it from the environment, in production. */
function policyOf(env: Record<string, string>): EgressPolicy {
  const settings = loadHttpNodeSettings(env, true) as HttpNodeSettings | string;
  if (typeof settings === "string") throw new Error(settings);
  return settings.egress;
}

const check = (url: string, env: Record<string, string>) => checkEgressUrl(url, policyOf(env), "http node", resolve);
async function refusal(url: string, env: Record<string, string>): Promise<EgressRefusedError> {
  const err = await check(url, env).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, url).toBeInstanceOf(EgressRefusedError);
  return err as EgressRefusedError;
}

describe("HTTP_NODE_PRIVATE_HOSTS", () => {
  it("a listed single-label sidecar is reached over plain http, pinned to its loopback address", async () => {
    const { url, addresses } = await check("http://sidecar:8080/work", { HTTP_NODE_PRIVATE_HOSTS: "sidecar:8080" });
    expect(url.href).toBe("http://sidecar:8080/work");
    expect(addresses).toEqual([{ address: "127.0.0.1", family: 4 }]);
  });

  it("a sidecar not listed is refused, and the refusal names HTTP_NODE_PRIVATE_HOSTS", async () => {
    const envs: Array<Record<string, string>> = [
      {},
      { HTTP_NODE_ALLOW_HOSTS: "127.0.0.1", HTTP_NODE_ALLOWED_PORTS: "8080" },
      { HTTP_NODE_PRIVATE_HOSTS: "other:8080" },
    ];
    for (const env of envs) {
      for (const url of [
        "http://sidecar:8080/",
        "https://sidecar:8080/",
        "http://127.0.0.1:8080/",
        "https://127.0.0.1:8080/",
        "https://ledger.corp.example.com/",
      ]) {
        const err = await refusal(url, env);
        expect(err.message, `${url} ${JSON.stringify(env)}`).toContain(
          "list it as host:port in HTTP_NODE_PRIVATE_HOSTS",
        );
      }
    }
  });

  it("a listed host on an unlisted port is refused, naming the settings", async () => {
    const env = { HTTP_NODE_PRIVATE_HOSTS: "sidecar:8080, 127.0.0.1:8080, 10.0.0.0/8:9000" };
    for (const url of [
      "http://sidecar:8081/",
      "http://sidecar/",
      "http://127.0.0.1:8081/",
      "https://127.0.0.1/",
      "http://ledger.corp.example.com:9001/",
    ]) {
      const err = await refusal(url, env);
      expect(err.message, url).toContain("HTTP_NODE_PRIVATE_HOSTS");
    }
    expect((await refusal("https://api.example.com:8443/", env)).message).toBe(
      "http node URL refused by the port arm: port 8443 is not allowed for https://api.example.com:8443 (only the default port or configured ports); add it to HTTP_NODE_ALLOWED_PORTS; to reach a private service, list it as host:port in HTTP_NODE_PRIVATE_HOSTS",
    );
  });

  it("a CIDR entry opens IP literals in it, and names whose every address lies in it, on its port only", async () => {
    const env = { HTTP_NODE_PRIVATE_HOSTS: "10.0.0.0/8:9000,[fd00::/8]:9000" };
    expect((await check("http://10.9.8.7:9000/x", env)).addresses).toEqual([{ address: "10.9.8.7", family: 4 }]);
    expect((await check("http://ledger.corp.example.com:9000/x", env)).addresses).toEqual([
      { address: "10.1.2.3", family: 4 },
    ]);
    expect((await check("http://billing.svc.cluster.local:9000/", env)).addresses).toEqual([
      { address: "10.20.0.7", family: 4 },
    ]);
    expect((await check("http://ula.corp.example.com:9000/", env)).addresses).toEqual([
      { address: "fd12:3456::7", family: 6 },
    ]);
    // One address outside the range, a private address in another range, the range on another port: refused.
    expect((await refusal("http://split.corp.example.com:9000/", env)).message).toContain("HTTP_NODE_PRIVATE_HOSTS");
    expect((await refusal("http://other-private.corp.example.com:9000/", env)).message).toContain("192.168.4.4");
    expect((await refusal("http://10.9.8.7:9001/", env)).message).toContain("HTTP_NODE_PRIVATE_HOSTS");
    // A public name on the range's port is not a private service: http stays refused.
    expect((await refusal("http://api.example.com:9000/", env)).arm).toBe("scheme");
  });

  it("a CIDR entry never makes the test-only loopback allowance open private names", async () => {
    const settings = loadHttpNodeSettings(
      { HTTP_NODE_PRIVATE_HOSTS: "10.0.0.0/8:8080", HTTP_NODE_ALLOW_LOOPBACK_FOR_TESTS: "true" },
      false,
    ) as HttpNodeSettings;
    // "sidecar" is single-label and resolves to loopback, outside the listed range: refused as before.
    const err = await checkEgressUrl("http://sidecar:8080/", settings.egress, "http node", resolve).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EgressRefusedError);
    expect((err as EgressRefusedError).arm).toBe("address");
    expect((err as Error).message).toContain("sidecar is a single-label name");
    // A proper loopback target still passes under the test-only allowance.
    expect((await checkEgressUrl("http://127.0.0.1:8080/", settings.egress, "http node", resolve)).addresses).toEqual([
      { address: "127.0.0.1", family: 4 },
    ]);
  });

  it("never opens metadata, link-local or other special addresses, listed or not", async () => {
    const env = { HTTP_NODE_PRIVATE_HOSTS: "169.254.0.0/16:80,sneaky.corp.example.com:80,0.0.0.0/0:80" };
    const meta = await refusal("http://169.254.169.254/latest/meta-data", env);
    expect(meta.message).toContain("cloud metadata address");
    expect(meta.message).not.toContain("HTTP_NODE_PRIVATE_HOSTS");
    expect((await refusal("http://169.254.1.1/", env)).message).toContain("link-local");
    expect((await refusal("http://sneaky.corp.example.com/", env)).message).toContain(
      "169.254.169.254, a cloud metadata address",
    );
    expect((await refusal("http://224.0.0.1/", env)).message).toContain("multicast");
  });

  it("the deny list still wins over a listed private service", async () => {
    const err = await refusal("http://sidecar:8080/", {
      HTTP_NODE_PRIVATE_HOSTS: "sidecar:8080",
      HTTP_NODE_DENY_HOSTS: "127.0.0.0/8",
    });
    expect(err.message).toBe(
      "http node URL refused by the policy arm: sidecar resolves to 127.0.0.1, which is on the http node deny list (HTTP_NODE_DENY_HOSTS)",
    );
  });

  it("refuses malformed entries at start, naming the setting", () => {
    for (const [entry, why] of [
      ["sidecar", "expected host:port"],
      ["sidecar:0", "the port must be 1-65535"],
      ["*.corp.example.com:80", "wildcards are not allowed"],
      ["metadata.google.internal:80", "a cloud metadata host can never be a private service"],
      ["10.0.0.0/33:80", "the host is not a DNS name, an IP address or a CIDR"],
      ["fd00::1:80", "expected host:port"],
    ] as const) {
      const result = loadHttpNodeSettings({ HTTP_NODE_PRIVATE_HOSTS: entry }, true);
      expect(typeof result, entry).toBe("string");
      expect(result as string, entry).toContain(
        `HTTP_NODE_PRIVATE_HOSTS: invalid private service ${JSON.stringify(entry)}: ${why}`,
      );
    }
    expect(
      typeof loadHttpNodeSettings({ HTTP_NODE_PRIVATE_HOSTS: "sidecar:8080, [fd00::1]:8080, 10.0.0.0/8:80" }, true),
    ).toBe("object");
  });

  it("opens nothing for push or peers: their private targets stay refused, and no refusal offers the http node setting", async () => {
    const config = loadConfig({ HTTP_NODE_PRIVATE_HOSTS: "sidecar:8080,127.0.0.1:8080,10.0.0.0/8:8080" });
    for (const [subject, policy] of [
      ["push", config.push.egress],
      ["peer", config.a2aPeer.egress],
    ] as const) {
      for (const url of [
        "http://sidecar:8080/",
        "https://127.0.0.1:8080/",
        "https://ledger.corp.example.com:8080/",
        "http://10.1.2.3:8080/",
      ]) {
        const err = await checkEgressUrl(url, policy, subject, resolve).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err, `${subject} ${url}`).toBeInstanceOf(EgressRefusedError);
        expect((err as Error).message, `${subject} ${url}`).not.toContain("HTTP_NODE_PRIVATE_HOSTS");
      }
    }
    // Their own settings are named where they would allow the target.
    const port = await checkEgressUrl("https://api.example.com:8443/", config.push.egress, "push", resolve).catch(
      (e: Error) => e,
    );
    expect((port as Error).message).toContain("add it to PUSH_ALLOWED_PORTS");
  });
});
