// The v2 `auth.lanes[]` advertises an `exp-only` oidc lane only because the token check enforces both lifetime
// bounds: a token over its issuer's window, or without `iat`, is refused with credential_lifetime_exceeded on the
// v2 surface (unauthenticated on v1, as before). A real OpenID issuer on loopback and the real app.
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLOCK_TOLERANCE_SECONDS } from "../../src/auth/oidc-authenticator.js";
import { OidcIssuer } from "../support/oidc-issuer.js";
import { openwopClient } from "../support/openwop-client.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const V2 = { "openwop-version": "2" };

describe("the oidc lane of OpenWOP 2 discovery", () => {
  let issuer: OidcIssuer;
  let t: TestApp;
  let call: ReturnType<typeof openwopClient>["call"];

  beforeAll(async () => {
    issuer = await OidcIssuer.start();
    t = await startTestApp({
      AUTH_OIDC_ISSUERS: JSON.stringify([{ issuer: issuer.issuer, audience: "aud", maxTokenLifetimeSeconds: 600 }]),
      AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS: "true",
    });
    call = openwopClient(t.baseUrl).call;
  });
  afterAll(async () => {
    await t?.close();
    await issuer?.close();
  });

  it("advertises exp-only with the window the check enforces, and the document validates", async () => {
    const doc = await call("GET", "/.well-known/openwop", undefined, V2);
    const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
    addFormats(ajv);
    const schema = new URL("../fixtures/openwop-v2/capabilities-excerpt.schema.json", import.meta.url);
    const validate = ajv.compile(JSON.parse(readFileSync(schema, "utf8")) as object);
    expect(validate(doc.body), JSON.stringify(validate.errors)).toBe(true);
    expect(doc.body.auth.lanes).toEqual([
      {
        lane: "oidc",
        issuers: [issuer.issuer],
        revocation: "exp-only",
        revocationWindowSeconds: 600 + CLOCK_TOLERANCE_SECONDS,
        minimumAssurance: "bearer",
      },
    ]);
    // The schema refuses exp-only on the api-key lane, and a windowed rule without its window.
    const lane = doc.body.auth.lanes[0];
    expect(validate({ ...doc.body, auth: { ...doc.body.auth, lanes: [{ ...lane, lane: "api-key" }] } })).toBe(false);
    const { revocationWindowSeconds: _w, ...windowless } = lane;
    expect(validate({ ...doc.body, auth: { ...doc.body.auth, lanes: [windowless] } })).toBe(false);
  });

  it("refuses a token over the window or without iat with credential_lifetime_exceeded", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: "ann", aud: "aud", tenant: "acme", scope: "runs:read" };
    const tooLong = await issuer.token(claims, { issuedAt: now, expiresAt: now + 3600 });
    const noIat = await issuer.token(claims, { issuedAt: null, expiresAt: now + 300 });
    const fine = await issuer.token(claims, { issuedAt: now, expiresAt: now + 300 });
    for (const token of [tooLong, noIat]) {
      const v2 = await call("GET", "/runs/acme~2F0123456789abcdef0123", undefined, {
        ...V2,
        authorization: `Bearer ${token}`,
      });
      expect(v2.status).toBe(401);
      expect(v2.body.error).toBe("credential_lifetime_exceeded");
      expect(v2.headers.get("www-authenticate")).toContain('error="invalid_token"');
      const v1 = await call("GET", "/v1/runs/0123456789abcdef0123", undefined, { authorization: `Bearer ${token}` });
      expect(v1.status).toBe(401);
      expect(v1.body.error).toBe("unauthenticated");
    }
    const ok = await call("GET", "/runs/acme~2F0123456789abcdef0123", undefined, {
      ...V2,
      authorization: `Bearer ${fine}`,
    });
    expect(ok.status).toBe(404);
    expect(ok.body.error).toBe("not_found");
  });
});
