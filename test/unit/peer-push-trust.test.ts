// Whether a peer's push body is the peer's word (peer/peer-push-trust.ts): signed with the peer's configured key
// (HMAC signingKey, or a JWT against its pinned jwks; a jwksUrl is checked end to end against a real host's JWKS in
// test/integration/a2a-invoke-peer-jwks.test.ts), unsigned for a peer without a key or one that can only send static
// credentials (pushAuth "static-bearer": a hint only), refused for a peer with a key and no valid signature;
// a committed signed push recognised when replayed, for the signature tolerance; and the pushAuth setting.
import { createHash, randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { parsePeers } from "../../src/peer/peer-config.js";
import { pushAuthOf } from "../../src/peer/peer-push-auth.js";
import { PeerJwks } from "../../src/peer/peer-jwks.js";
import { PeerPushTrust } from "../../src/peer/peer-push-trust.js";
import { signPushBody } from "../../src/push/push-signature.js";

const KEY = "peer-signing-key-0123456789abcdef";
const problems: string[] = [];
const peers = parsePeers(
  {
    plain: { cardUrl: "https://plain.example/.well-known/agent-card.json" },
    hmac: { cardUrl: "https://hmac.example/.well-known/agent-card.json", signingKey: KEY },
  },
  "test",
  (m) => problems.push(m),
);
const body = JSON.stringify({ statusUpdate: { taskId: "p1", status: { state: "TASK_STATE_COMPLETED" } } });
const signed = (at: number, key = KEY, text = body) => ({
  headers: { "x-openwop-timestamp": String(at), "x-openwop-signature": signPushBody(key, at, text) },
  body,
});

describe("PeerPushTrust", () => {
  const now = 1_800_000_000;
  let clock = now;
  // No peer here has a JWKS: a fetch would be a bug.
  const trust = new PeerPushTrust(
    peers,
    new PeerJwks(() => Promise.reject(new Error("no JWKS fetch expected"))),
    () => clock,
  );

  it("a peer without a key (or no named peer): unsigned, a hint whatever headers it sends", async () => {
    expect(problems).toEqual([]);
    expect(await trust.check("plain", signed(now))).toEqual({ verdict: "unsigned" });
    expect(await trust.check(undefined, { headers: {}, body })).toEqual({ verdict: "unsigned" });
  });

  it("a peer with a signingKey: a valid signature is trusted; none, a wrong key, another body or an old timestamp is refused", async () => {
    expect(await trust.check("hmac", signed(now))).toMatchObject({ verdict: "signed", by: "hmac" });
    expect(await trust.check("hmac", { headers: {}, body })).toMatchObject({ verdict: "refused" });
    expect(await trust.check("hmac", signed(now, "another-key-0123456789abcdef"))).toMatchObject({
      verdict: "refused",
    });
    expect(await trust.check("hmac", { ...signed(now), body: body.replace("COMPLETED", "FAILED") })).toMatchObject({
      verdict: "refused",
    });
    expect(await trust.check("hmac", signed(now - 301))).toMatchObject({ verdict: "refused" });
  });

  it("a committed signed push is a replay while its signature could still verify, and only that one", async () => {
    const first = await trust.check("hmac", signed(now));
    const other = await trust.check("hmac", signed(now + 1));
    if (first.verdict !== "signed" || other.verdict !== "signed") throw new Error("expected signed pushes");
    expect(trust.isReplay(first.proof)).toBe(false);
    trust.remember(first.proof);
    expect(trust.isReplay(first.proof)).toBe(true);
    expect(trust.isReplay(other.proof)).toBe(false);
    clock = now + 601;
    expect(trust.isReplay(first.proof)).toBe(false);
    clock = now;
  });

  describe("a peer with keys (pinned jwks here; jwksUrl alike)", () => {
    let key: CryptoKey;
    let keyed: ReturnType<typeof parsePeers>;
    const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
    const jwtOf = (
      signer: CryptoKey,
      claims: Record<string, unknown> = { request_body_sha256: sha(body) },
      iat = now,
    ) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "ES256", kid: "k1" })
        .setIssuedAt(iat)
        .setJti(randomUUID())
        .sign(signer);
    beforeAll(async () => {
      const pair = await generateKeyPair("ES256");
      key = pair.privateKey;
      const jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256" }] };
      const found: string[] = [];
      keyed = parsePeers(
        {
          pinned: { cardUrl: "https://p.example/card", jwks },
          // The same keys, but the peer can only send the token back: its keys verify its card only.
          static: { cardUrl: "https://s.example/card", jwks, pushAuth: "static-bearer" },
          // Keys and HMAC: either signature makes the push the peer's word.
          both: { cardUrl: "https://b.example/card", jwks, signingKey: KEY },
        },
        "test",
        (m) => found.push(m),
      );
      expect(found).toEqual([]);
    });
    const trustOf = () =>
      new PeerPushTrust(
        keyed,
        new PeerJwks(() => Promise.reject(new Error("no JWKS fetch expected: the keys are pinned"))),
        () => now,
      );

    it("push auth: jwt for a peer with keys unless configured static-bearer; static-bearer without keys or a named peer", () => {
      expect(pushAuthOf(keyed.get("pinned"))).toBe("jwt");
      expect(pushAuthOf(keyed.get("static"))).toBe("static-bearer");
      expect(pushAuthOf(peers.get("plain"))).toBe("static-bearer");
      expect(pushAuthOf(peers.get("hmac"))).toBe("static-bearer");
      expect(pushAuthOf(undefined)).toBe("static-bearer");
    });

    it("a JWT signed with the peer's key over this body is trusted; the static token, another key, another body, an old JWT or none is refused", async () => {
      const trust = trustOf();
      expect(
        await trust.check("pinned", { headers: { authorization: `Bearer ${await jwtOf(key)}` }, body }),
      ).toMatchObject({ verdict: "signed", by: "jwks" });
      expect(await trust.check("pinned", { headers: { authorization: "Bearer the-static-token" }, body })).toEqual({
        verdict: "refused",
        why: "no signed JWT (Authorization: Bearer) from a peer with a JWKS",
      });
      expect(await trust.check("pinned", { headers: {}, body })).toMatchObject({ verdict: "refused" });
      const other = (await generateKeyPair("ES256")).privateKey;
      expect(await trust.check("pinned", { headers: { authorization: `Bearer ${await jwtOf(other)}` }, body })).toEqual(
        {
          verdict: "refused",
          why: "the JWT does not verify against the peer's JWKS (ERR_JWS_SIGNATURE_VERIFICATION_FAILED)",
        },
      );
      expect(
        await trust.check("pinned", {
          headers: { authorization: `Bearer ${await jwtOf(key, { request_body_sha256: sha("another body") })}` },
          body,
        }),
      ).toEqual({ verdict: "refused", why: "the JWT's request_body_sha256 does not match the body" });
      expect(
        await trust.check("pinned", {
          headers: { authorization: `Bearer ${await jwtOf(key, { request_body_sha256: sha(body) }, now - 400)}` },
          body,
        }),
      ).toMatchObject({ verdict: "refused" });
    });

    it("pushAuth static-bearer: the push is a hint whatever it carries (a JWT is not looked at); with keys and a signingKey, the HMAC alone is enough", async () => {
      const trust = trustOf();
      expect(await trust.check("static", { headers: { authorization: "Bearer the-static-token" }, body })).toEqual({
        verdict: "unsigned",
      });
      expect(await trust.check("static", { headers: { authorization: `Bearer ${await jwtOf(key)}` }, body })).toEqual({
        verdict: "unsigned",
      });
      expect(await trust.check("both", signed(now))).toMatchObject({ verdict: "signed", by: "hmac" });
      expect(
        await trust.check("both", { headers: { authorization: `Bearer ${await jwtOf(key)}` }, body }),
      ).toMatchObject({ verdict: "signed", by: "jwks" });
      expect(await trust.check("both", { headers: {}, body })).toMatchObject({ verdict: "refused" });
    });
  });

  it('A2A_PEERS: pushAuth is "jwt" (needs keys) or "static-bearer"', () => {
    const found: string[] = [];
    const parsed = parsePeers(
      {
        j: { cardUrl: "https://j.example/card", jwksUrl: "https://j.example/jwks.json", pushAuth: "jwt" },
        s: { cardUrl: "https://s.example/card", jwksUrl: "https://s.example/jwks.json", pushAuth: "static-bearer" },
        nokeys: { cardUrl: "https://n.example/card", pushAuth: "jwt" },
        odd: { cardUrl: "https://o.example/card", jwksUrl: "https://o.example/jwks.json", pushAuth: "hmac" },
      },
      "A2A_PEERS",
      (m) => found.push(m),
    );
    expect(parsed.get("j")?.pushAuth).toBe("jwt");
    expect(parsed.get("s")?.pushAuth).toBe("static-bearer");
    expect(found).toEqual([
      'A2A_PEERS: peer "nokeys": pushAuth "jwt" needs the peer\'s keys to verify its pushes: "jwksUrl" or pinned "jwks"',
      'A2A_PEERS: peer "odd": pushAuth must be "jwt" or "static-bearer" (or left out: "jwt" for a peer with keys)',
    ]);
  });

  it("A2A_PEERS: jwksUrl must be an http(s) URL without userinfo", () => {
    const found: string[] = [];
    const parsed = parsePeers(
      {
        j: { cardUrl: "https://j.example/card", jwksUrl: "https://j.example/jwks.json" },
        bad: { cardUrl: "https://b.example/card", jwksUrl: "ftp://x" },
      },
      "A2A_PEERS",
      (m) => found.push(m),
    );
    expect(parsed.get("j")?.jwksUrl).toBe("https://j.example/jwks.json");
    expect(found).toEqual([expect.stringContaining('peer "bad": jwksUrl must be an absolute http(s) URL')]);
  });
});
