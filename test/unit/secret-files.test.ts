// Every secret variable read from `<NAME>_FILE`, through the path a start and `check` both take (settleHost: options
// and environment → secret files → the settings loaders). The keys come from the `keys` command's generator, so a
// production start accepting them is checked here too. No message may carry key material.
import { generateKeyPairSync } from "node:crypto";
import { chmod, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ConfigError, type Config } from "../../src/config/config.js";
import { generateProductionKeys, type ProductionKeys } from "../../src/config/production-keys.js";
import { readSecretFiles, SECRET_VARIABLES, type SecretVariable } from "../../src/config/secret-files.js";
import { settleHost } from "../../src/start-host.js";

let dir: string;
let keys: ProductionKeys;
/** A production environment with every secret given inline (the keys command's values). */
let base: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "secret-files-"));
  keys = await generateProductionKeys();
  base = {
    NODE_ENV: "production",
    PUBLIC_URL: "https://agent.example.com",
    MONGODB_URI: "mongodb://user:s3cret-pass@db.example:27017/openwop?replicaSet=rs0",
    ...keys,
  };
  // The console signing in through an identity provider, so its client secret is read.
  Object.assign(base, {
    CONSOLE_ENABLED: "true",
    AUTH_OIDC_ISSUER: "https://idp.example.com",
    AUTH_OIDC_AUDIENCE: "openwop-host",
    CONSOLE_OIDC_CLIENT_ID: "console",
  });
});

const EVIDENCE_KEY = JSON.stringify({
  ...generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }),
  kid: "evidence-test",
});

/** Each secret's value, one valid example per variable, and how the loaded configuration shows it was read. */
const VALUES: Record<SecretVariable, () => string> = {
  API_KEYS: () => keys.API_KEYS,
  MONGODB_URI: () => base["MONGODB_URI"]!,
  INTERRUPT_TOKEN_KEYS: () => keys.INTERRUPT_TOKEN_KEYS,
  SIGNING_KEYS: () => keys.SIGNING_KEYS,
  EVIDENCE_SIGNING_KEY: () => EVIDENCE_KEY,
  PUSH_ENCRYPTION_KEY: () => keys.PUSH_ENCRYPTION_KEY,
  PUSH_ENCRYPTION_KEY_PREVIOUS: () => Buffer.alloc(32, 9).toString("hex"),
  PUSH_SIGNING_KEY: () => keys.PUSH_SIGNING_KEY,
  A2A_PEER_CALLBACK_KEY: () => keys.A2A_PEER_CALLBACK_KEY,
  CONSOLE_OIDC_CLIENT_SECRET: () => "console-client-secret-5f2c9a7e1b3d4f60",
};

const READ: Record<SecretVariable, (config: Config) => unknown> = {
  API_KEYS: (c) => c.auth.keys.map((k) => k.id),
  MONGODB_URI: (c) => c.mongodbUri,
  INTERRUPT_TOKEN_KEYS: (c) => c.interruptTokens.keys?.reveal().map((k) => `${k.kid}:${k.secret.toString("base64")}`),
  SIGNING_KEYS: (c) => c.signingKeys.keys?.reveal(),
  EVIDENCE_SIGNING_KEY: (c) => c.signingKeys.evidenceKey?.reveal(),
  PUSH_ENCRYPTION_KEY: (c) => c.push.encryptionKey?.reveal().toString("base64"),
  PUSH_ENCRYPTION_KEY_PREVIOUS: (c) => c.push.previousEncryptionKeys.map((k) => k.reveal().toString("hex")),
  PUSH_SIGNING_KEY: (c) => c.push.signingKey?.reveal(),
  A2A_PEER_CALLBACK_KEY: (c) => c.a2aPeer.callbackKey?.reveal().toString("base64"),
  CONSOLE_OIDC_CLIENT_SECRET: (c) => c.consoleSso?.clientSecret?.reveal(),
};

async function settle(env: Record<string, string>): Promise<Config> {
  return (await settleHost({}, env, { pickPort: false })).config;
}

async function problemsOf(env: Record<string, string>): Promise<readonly string[]> {
  try {
    await settle(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("the start was expected to fail");
}

async function secretFile(name: string, content: string): Promise<string> {
  const path = join(dir, `${name}-${Math.random().toString(36).slice(2)}`);
  await writeFile(path, content, { mode: 0o600 });
  return path;
}

/** Every secret value of `base` (and the one made for PUSH_ENCRYPTION_KEY_PREVIOUS): none may appear in a message. */
function expectNoKeyMaterial(text: string): void {
  for (const name of SECRET_VARIABLES) {
    const value = VALUES[name]();
    expect(text).not.toContain(value);
    // A part of a key is as bad as all of it: the random middle of each value.
    expect(text).not.toContain(value.slice(Math.floor(value.length / 2) - 8, Math.floor(value.length / 2) + 8));
  }
}

describe("the keys command's values", () => {
  it("pass a production start's settings check as they are", async () => {
    const config = await settle(base);
    expect(config.env).toBe("production");
    expect(config.auth.keys.map((k) => k.id)).toEqual(["ops"]);
    expect(config.signingKeys.keys).toBeDefined();
  });

  it("are fresh each time", async () => {
    const again = await generateProductionKeys();
    for (const name of Object.keys(keys) as Array<keyof ProductionKeys>) expect(again[name]).not.toBe(keys[name]);
  });
});

describe("<NAME>_FILE", () => {
  it("covers the secret settings the issue lists", () => {
    expect([...SECRET_VARIABLES].sort()).toEqual(
      [
        "A2A_PEER_CALLBACK_KEY",
        "API_KEYS",
        "CONSOLE_OIDC_CLIENT_SECRET",
        "EVIDENCE_SIGNING_KEY",
        "INTERRUPT_TOKEN_KEYS",
        "MONGODB_URI",
        "PUSH_ENCRYPTION_KEY",
        "PUSH_ENCRYPTION_KEY_PREVIOUS",
        "PUSH_SIGNING_KEY",
        "SIGNING_KEYS",
      ].sort(),
    );
  });

  for (const name of SECRET_VARIABLES) {
    describe(name, () => {
      it(`reads ${name} from the file ${name}_FILE names, trailing line break dropped`, async () => {
        const env: Record<string, string> = { ...base, [name]: VALUES[name]() };
        const inline = READ[name](await settle(env));
        expect(inline).toBeDefined();
        delete env[name];
        env[`${name}_FILE`] = await secretFile(name, `${VALUES[name]()}\n`);
        expect(READ[name](await settle(env))).toEqual(inline);
      });

      it(`refuses ${name} and ${name}_FILE both set, naming them`, async () => {
        const problems = await problemsOf({
          ...base,
          [name]: VALUES[name](),
          [`${name}_FILE`]: await secretFile(name, VALUES[name]()),
        });
        expect(problems).toContain(`${name} and ${name}_FILE are both set; set one of them`);
        expectNoKeyMaterial(problems.join("\n"));
      });

      it(`refuses a ${name}_FILE that does not exist, naming the variable and the path`, async () => {
        const env: Record<string, string> = { ...base, [`${name}_FILE`]: join(dir, "no-such-file") };
        delete env[name];
        const problems = await problemsOf(env);
        expect(problems).toContain(`${name}_FILE: ${join(dir, "no-such-file")} does not exist`);
        expectNoKeyMaterial(problems.join("\n"));
      });
    });
  }

  it("refuses an unreadable file, a folder and an empty file", async () => {
    const unreadable = await secretFile("PUSH_SIGNING_KEY", keys.PUSH_SIGNING_KEY);
    await chmod(unreadable, 0o000);
    const empty = await secretFile("SIGNING_KEYS", "\n");
    const env: Record<string, string> = {
      ...base,
      PUSH_SIGNING_KEY_FILE: unreadable,
      A2A_PEER_CALLBACK_KEY_FILE: dir,
      SIGNING_KEYS_FILE: empty,
    };
    delete env["PUSH_SIGNING_KEY"];
    delete env["A2A_PEER_CALLBACK_KEY"];
    delete env["SIGNING_KEYS"];
    const problems = await problemsOf(env);
    // root reads any file whatever its mode: the permission case can only be seen as another user.
    if (process.getuid?.() !== 0)
      expect(problems).toContain(`PUSH_SIGNING_KEY_FILE: ${unreadable} cannot be read (permission denied)`);
    expect(problems).toContain(`A2A_PEER_CALLBACK_KEY_FILE: ${dir} is not a file`);
    expect(problems).toContain(`SIGNING_KEYS_FILE: ${empty} is empty`);
    expectNoKeyMaterial(problems.join("\n"));
  });

  it("reports a key file in the wrong format under the variable's name, says it came from the file, and never echoes it", async () => {
    const wrong = {
      PUSH_ENCRYPTION_KEY: "not-a-key-but-secret-0123456789",
      SIGNING_KEYS: `{"kty":"oct","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQ"}`,
      INTERRUPT_TOKEN_KEYS: "k1:dG9vLXNob3J0LXNlY3JldA",
      API_KEYS: `[{"id":"ops","tenant":"default","scopes":["runs:read"],"key":"short"}]`,
    };
    const env: Record<string, string> = { ...base };
    for (const [name, value] of Object.entries(wrong)) {
      delete env[name];
      env[`${name}_FILE`] = await secretFile(name, value);
    }
    const problems = await problemsOf(env);
    for (const name of Object.keys(wrong)) {
      const problem = problems.find(
        (p) => p.startsWith(name) && p.endsWith(`(${name} was read from the file ${name}_FILE names)`),
      );
      expect(problem, `${name} in ${problems.join("\n")}`).toBeDefined();
    }
    const text = problems.join("\n");
    for (const value of Object.values(wrong)) expect(text).not.toContain(value);
    expectNoKeyMaterial(text);
  });

  it("in production, names every missing secret when none is given (what check prints)", async () => {
    const problems = (await problemsOf({ NODE_ENV: "production" })).join("\n");
    for (const name of [
      "MONGODB_URI",
      "PUBLIC_URL",
      "API_KEYS",
      "INTERRUPT_TOKEN_KEYS",
      "SIGNING_KEYS",
      "PUSH_ENCRYPTION_KEY",
      "PUSH_SIGNING_KEY",
      "A2A_PEER_CALLBACK_KEY",
    ]) {
      expect(problems).toContain(name);
    }
  });

  it("lets startHost's options.env win over the process environment, file or value", async () => {
    const fromFile = await secretFile("PUSH_SIGNING_KEY", "x".repeat(40));
    const processEnv: Record<string, string> = { ...base, PUSH_SIGNING_KEY_FILE: fromFile };
    delete processEnv["PUSH_SIGNING_KEY"];
    const resolved = await settleHost({ env: { PUSH_SIGNING_KEY: "y".repeat(40) } }, processEnv, { pickPort: false });
    expect(resolved.config.push.signingKey?.reveal()).toBe("y".repeat(40));
  });

  it("leaves a variable that is not a secret alone: its _FILE is not read", () => {
    const out = readSecretFiles({ PUBLIC_URL_FILE: "/nonexistent", TLS_CERT_FILE: "/nonexistent" });
    expect(out.problems).toEqual([]);
    expect(out.env["PUBLIC_URL"]).toBeUndefined();
  });
});
