import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PeerCertificate } from "node:tls";
import { afterAll, describe, expect, it } from "vitest";
import {
  ClientCertificateAuthenticator,
  parseClientPrincipals,
} from "../../src/auth/client-certificate-authenticator.js";
import { loadConfig, type ConfigError } from "../../src/config/config.js";
import { loadTlsServing, TlsFileWatcher } from "../../src/transport/tls-files.js";
import { readTlsSettings } from "../../src/transport/tls-settings.js";
import { EnvReader } from "../../src/domain/env-settings.js";
import { TestCertificates } from "../support/test-certificates.js";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ LOG_LEVEL: "silent", ...env });
    return [];
  } catch (err) {
    return [...(err as ConfigError).problems];
  }
}

describe("TLS settings", () => {
  it("are off without files and report settings that need them", () => {
    expect(EnvReader.load({}, readTlsSettings)).toBeUndefined();
    expect(problemsOf({ TLS_CERT_FILE: "/x.crt" })).toEqual([
      "TLS_CERT_FILE and TLS_KEY_FILE go together (the server certificate chain and its private key, PEM)",
    ]);
    expect(problemsOf({ TLS_CLIENT_CA_FILE: "/ca.crt" })[0]).toMatch(/need TLS_CERT_FILE and TLS_KEY_FILE/);
    expect(problemsOf({ TLS_CERT_FILE: "/x.crt", TLS_KEY_FILE: "/x.key", TLS_CLIENT_AUTH: "required" })[0]).toMatch(
      /TLS_CLIENT_AUTH=required needs TLS_CLIENT_CA_FILE/,
    );
    expect(problemsOf({ TLS_CERT_FILE: "/x.crt", TLS_KEY_FILE: "/x.key", TLS_CLIENT_AUTH: "sometimes" })[0]).toMatch(
      /TLS_CLIENT_AUTH must be one of none, optional, required/,
    );
    expect(
      problemsOf({
        TLS_CERT_FILE: "/x.crt",
        TLS_KEY_FILE: "/x.key",
        TLS_CLIENT_PRINCIPALS: '[{"san":"DNS:a","tenant":"t","scopes":[]}]',
      })[0],
    ).toMatch(/TLS_CLIENT_PRINCIPALS needs TLS_CLIENT_AUTH=optional or required/);
  });

  it("default PUBLIC_URL to https and TLS_CLIENT_AUTH to optional with a client CA", () => {
    const config = loadConfig({
      LOG_LEVEL: "silent",
      PORT: "8443",
      TLS_CERT_FILE: "/x.crt",
      TLS_KEY_FILE: "/x.key",
      TLS_CLIENT_CA_FILE: "/ca.crt",
    });
    expect(config.publicUrl).toBe("https://localhost:8443");
    expect(config.tls?.clientAuth).toBe("optional");
  });

  it("TLS_CLIENT_PRINCIPALS entries are checked one by one", () => {
    expect(() => parseClientPrincipals("nope")).toThrow(/JSON array/);
    expect(() => parseClientPrincipals("[]")).toThrow(/non-empty/);
    expect(() => parseClientPrincipals('[{"tenant":"t","scopes":[]}]')).toThrow(
      /\[0\] needs exactly one of "subject" or "san"/,
    );
    expect(() => parseClientPrincipals('[{"subject":"CN=a","san":"DNS:a","tenant":"t","scopes":[]}]')).toThrow(
      /exactly one/,
    );
    expect(() => parseClientPrincipals('[{"subject":"billing","tenant":"t","scopes":[]}]')).toThrow(/KEY=value/);
    expect(() => parseClientPrincipals('[{"san":"spiffe://a","tenant":"t","scopes":[]}]')).toThrow(/"DNS:…"/);
    expect(() => parseClientPrincipals('[{"san":"DNS:a","tenant":"*","scopes":[]}]')).toThrow(/tenant/);
    expect(() => parseClientPrincipals('[{"san":"DNS:a","tenant":"t","scopes":["root"]}]')).toThrow(
      /scopes must be an array of runs:create/,
    );
  });
});

describe("ClientCertificateAuthenticator", () => {
  const auth = new ClientCertificateAuthenticator(
    parseClientPrincipals(
      JSON.stringify([
        { subject: "O=Acme, CN=billing-agent", tenant: "acme", scopes: ["runs:read"] },
        { san: "URI:spiffe://acme/a, b", tenant: "odd", scopes: [] },
        { san: "DNS:agent.acme.example", tenant: "dns", scopes: [] },
      ]),
    ),
  );
  const headers = () => undefined;
  const cert = (subject: Record<string, string | string[]>, subjectaltname?: string) =>
    ({ raw: Buffer.from("x"), subject, ...(subjectaltname ? { subjectaltname } : {}) }) as unknown as PeerCertificate;

  it("matches the whole subject in any order, never a part of it", () => {
    expect(auth.authenticate({ headers, peerCertificate: cert({ CN: "billing-agent", O: "Acme" }) })).toEqual({
      tenant: "acme",
      id: "mtls:O=Acme, CN=billing-agent",
      scopes: ["runs:read"],
    });
    expect(auth.authenticate({ headers, peerCertificate: cert({ CN: "billing-agent" }) })).toBeUndefined();
    expect(
      auth.authenticate({ headers, peerCertificate: cert({ CN: "billing-agent", O: "Acme", OU: "x" }) }),
    ).toBeUndefined();
  });

  it("matches one SAN exactly, quoted values included; nothing without a certificate", () => {
    expect(
      auth.authenticate({ headers, peerCertificate: cert({ CN: "x" }, 'DNS:other, URI:"spiffe://acme/a, b"') })?.tenant,
    ).toBe("odd");
    expect(
      auth.authenticate({ headers, peerCertificate: cert({ CN: "x" }, "DNS:evil.example, DNS:agent.acme.example") })
        ?.tenant,
    ).toBe("dns");
    expect(
      auth.authenticate({ headers, peerCertificate: cert({ CN: "x" }, "DNS:agent.acme.example.evil") }),
    ).toBeUndefined();
    expect(auth.authenticate({ headers })).toBeUndefined();
  });
});

describe("TLS file rotation", () => {
  const certs = new TestCertificates();
  afterAll(() => certs.remove());

  it("applies changed files that make a valid pair, and keeps the previous context on a mismatched pair", () => {
    const ca = certs.ca("ca");
    const first = certs.leaf("first", ca, "/CN=localhost", { san: "DNS:localhost" });
    const second = certs.leaf("second", ca, "/CN=localhost", { san: "DNS:localhost" });
    const settings = {
      certFile: join(certs.dir, "live.crt"),
      keyFile: join(certs.dir, "live.key"),
      clientCaFile: undefined,
      clientAuth: "none" as const,
      clientPrincipals: [],
      reloadIntervalMs: 86_400_000,
    };
    copyFileSync(first.certFile, settings.certFile);
    copyFileSync(first.keyFile, settings.keyFile);
    const applied: Buffer[] = [];
    const failures: string[] = [];
    const watcher = new TlsFileWatcher(
      settings,
      loadTlsServing(settings),
      (context) => applied.push(context.cert as Buffer),
      (err) => failures.push(err.message),
    );
    try {
      expect(watcher.check()).toBe(false);
      // Half-way: the new certificate with the old key.
      copyFileSync(second.certFile, settings.certFile);
      expect(watcher.check()).toBe(false);
      expect(failures[0]).toMatch(/TLS_CERT_FILE \/ TLS_KEY_FILE \/ TLS_CLIENT_CA_FILE cannot be used/);
      expect(failures[0]).not.toContain("PRIVATE KEY");
      copyFileSync(second.keyFile, settings.keyFile);
      expect(watcher.check()).toBe(true);
      expect(applied).toEqual([second.cert]);
      writeFileSync(settings.keyFile, "");
      expect(watcher.check()).toBe(false);
      expect(applied).toHaveLength(1);
    } finally {
      watcher.stop();
    }
  });

  it("names the variable whose file cannot be read", () => {
    expect(() =>
      loadTlsServing({
        certFile: "/nonexistent.crt",
        keyFile: "/nonexistent.key",
        clientCaFile: undefined,
        clientAuth: "none",
        clientPrincipals: [],
        reloadIntervalMs: 60_000,
      }),
    ).toThrow("TLS_CERT_FILE (/nonexistent.crt) cannot be read: ENOENT");
  });
});
