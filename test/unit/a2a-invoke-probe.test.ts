import { describe, expect, it } from "vitest";
import { peerCardUrlOf, pinnedVersionOf } from "../../src/engine/nodes/a2a-invoke/a2a-invoke-probe.js";
import { DomainError } from "../../src/domain/errors.js";

/** The invoke seam's request reading: which version a request pins, and where the peer's card is. */
describe("the invoke seam's version pin", () => {
  it("pins the version asked for, in either spelling, and nothing when none is asked", () => {
    expect(pinnedVersionOf({})).toBeUndefined();
    expect(pinnedVersionOf({ requestVersion: "1.0.0" })).toBe("1.0");
    expect(pinnedVersionOf({ peerOffersOnly: "0.3" })).toBe("0.3");
    expect(pinnedVersionOf({ requestVersion: "0.3", peerOffersOnly: "0.3.0" })).toBe("0.3");
  });

  it("refuses a version we do not speak, and a request that asks for one the peer is said not to offer", () => {
    const refused = (request: Parameters<typeof pinnedVersionOf>[0]) => {
      try {
        pinnedVersionOf(request);
      } catch (err) {
        return err as DomainError;
      }
      throw new Error("not refused");
    };
    const unknown = refused({ requestVersion: "99.0" });
    expect(unknown).toBeInstanceOf(DomainError);
    expect(unknown.code).toBe("interop-version-unsupported");
    expect(unknown.details).toMatchObject({
      requested: "99.0",
      path: "body.requestVersion",
      supported: ["1.0", "0.3"],
    });
    expect(refused({ peerOffersOnly: "garbage" }).details).toMatchObject({ path: "body.peerOffersOnly" });
    const disagree = refused({ requestVersion: "1.0", peerOffersOnly: "0.3" });
    expect(disagree.code).toBe("interop-version-unsupported");
    expect(disagree.message).toContain("offers only 0.3");
  });
});

describe("the peer's card URL", () => {
  it("is the well-known card of a base URL, and a card URL as given", () => {
    expect(peerCardUrlOf("http://127.0.0.1:4000")).toBe("http://127.0.0.1:4000/.well-known/agent-card.json");
    expect(peerCardUrlOf("https://peer.example/")).toBe("https://peer.example/.well-known/agent-card.json");
    expect(peerCardUrlOf("https://peer.example/agents/x/card.json")).toBe("https://peer.example/agents/x/card.json");
  });
});
