// Whether a peer's push body is the peer's word (peer/peer-push-trust.ts): signed with the peer's configured key
// (HMAC signingKey; JWKS is checked end to end in test/integration/a2a-invoke-push.test.ts against a real JWKS
// server), unsigned for a peer without a key (a hint only), refused for a peer with a key and no valid signature;
// and a committed signed push recognised when replayed, for the signature tolerance.
import { describe, expect, it } from "vitest";
import { parsePeers } from "../../src/peer/peer-config.js";
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
const signed = (at: number, key = KEY, text = body) => ({ headers: { "x-openwop-timestamp": String(at), "x-openwop-signature": signPushBody(key, at, text) }, body });

describe("PeerPushTrust", () => {
  const now = 1_800_000_000;
  let clock = now;
  // No peer here has a JWKS: a fetch would be a bug.
  const trust = new PeerPushTrust(peers, new PeerJwks(() => Promise.reject(new Error("no JWKS fetch expected"))), () => clock);

  it("a peer without a key (or no named peer): unsigned, a hint whatever headers it sends", async () => {
    expect(problems).toEqual([]);
    expect(await trust.check("plain", signed(now))).toEqual({ verdict: "unsigned" });
    expect(await trust.check(undefined, { headers: {}, body })).toEqual({ verdict: "unsigned" });
  });

  it("a peer with a signingKey: a valid signature is trusted; none, a wrong key, another body or an old timestamp is refused", async () => {
    expect(await trust.check("hmac", signed(now))).toMatchObject({ verdict: "signed", by: "hmac" });
    expect(await trust.check("hmac", { headers: {}, body })).toMatchObject({ verdict: "refused" });
    expect(await trust.check("hmac", signed(now, "another-key-0123456789abcdef"))).toMatchObject({ verdict: "refused" });
    expect(await trust.check("hmac", { ...signed(now), body: body.replace("COMPLETED", "FAILED") })).toMatchObject({ verdict: "refused" });
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

  it("A2A_PEERS: jwksUrl must be an http(s) URL without userinfo", () => {
    const found: string[] = [];
    const parsed = parsePeers({ j: { cardUrl: "https://j.example/card", jwksUrl: "https://j.example/jwks.json" }, bad: { cardUrl: "https://b.example/card", jwksUrl: "ftp://x" } }, "A2A_PEERS", (m) => found.push(m));
    expect(parsed.get("j")?.jwksUrl).toBe("https://j.example/jwks.json");
    expect(found).toEqual([expect.stringContaining('peer "bad": jwksUrl must be an absolute http(s) URL')]);
  });
});
