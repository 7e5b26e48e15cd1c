import { describe, expect, it } from "vitest";
import { bareIdFor, boundIdOf, projectBoundId } from "../../src/domain/bound-id.js";
import { DomainError } from "../../src/domain/errors.js";
import { advertisedVersions, negotiatedMajor } from "../../src/transport/openwop-version.js";
import type { HttpRequest } from "../../src/transport/http-io.js";

const ID = "3f0c2a54-8a7e-4c1e-9d39-3b1f6f0e2b11";
const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    return err instanceof DomainError ? err.code : "not a DomainError";
  }
  return "no error";
};

describe("tenant-bound ids (identity.md §5)", () => {
  it("projects every byte outside [A-Za-z0-9._-] as ~XX, and reads both wire forms back", () => {
    expect(projectBoundId(`acme/${ID}`)).toBe(`acme~2F${ID}`);
    expect(projectBoundId("a~b/é")).toBe("a~7Eb~2F~C3~A9");
    expect(bareIdFor(`acme~2F${ID}`, "acme", true)).toBe(ID);
    expect(bareIdFor(`acme/${ID}`, "acme", true)).toBe(ID); // %2F, after the router's percent-decoding
    expect(bareIdFor(`acme~2f${ID}`, "acme", false)).toBe(ID);
  });

  it("checks the tenant before anything else, and refuses malformed ids as validation errors", () => {
    expect(codeOf(() => bareIdFor(`globex~2F${ID}`, "acme", true))).toBe("id-tenant-mismatch");
    for (const bad of [`~2F${ID}`, "acme~2F", "acme~2Fshort", "acme~2", "acme~ZZ", `a~2F${ID}~2Fx`, "x".repeat(15)])
      expect(
        codeOf(() => bareIdFor(bad, "acme", true)),
        bad,
      ).toBe("invalid-params");
  });

  it("admits the bare v1 id only through the overlap", () => {
    expect(bareIdFor(ID, "acme", true)).toBe(ID);
    expect(codeOf(() => bareIdFor(ID, "acme", false))).toBe("invalid-params");
  });

  it("mints only from tenants the grammar allows, never with ~", () => {
    expect(boundIdOf("acme.eu-1_x", ID)).toBe(`acme.eu-1_x/${ID}`);
    for (const tenant of ["acme corp", "a~b", "", "t".repeat(129)])
      expect(
        codeOf(() => boundIdOf(tenant, ID)),
        tenant,
      ).toBe("permission-denied");
  });
});

describe("OpenWOP-Version (versioning.md §1.3)", () => {
  const req = (value?: string | string[]): HttpRequest =>
    ({ headers: value === undefined ? {} : { "openwop-version": value } }) as unknown as HttpRequest;
  const overlap = { v1: true };
  const retired = { v1: false };

  it("selects by major, defaults to preferredVersion's major, and keeps /v1 at 1", () => {
    expect(negotiatedMajor(req("2"), "/runs", overlap)).toBe(2);
    expect(negotiatedMajor(req("2.7"), "/runs", overlap)).toBe(2);
    expect(negotiatedMajor(req(), "/runs", overlap)).toBe(1);
    expect(negotiatedMajor(req(), "/runs", retired)).toBe(2);
    expect(negotiatedMajor(req("1"), "/v1/runs", overlap)).toBe(1);
    expect(negotiatedMajor(req(), "/v1/runs", retired)).toBe(2); // no /v1 left: its 404 is a v2 answer
  });

  it("refuses unserved, malformed, repeated and mismatched values with the registry's codes", () => {
    expect(codeOf(() => negotiatedMajor(req("3"), "/runs", overlap))).toBe("protocol-version-unsupported");
    expect(codeOf(() => negotiatedMajor(req("1"), "/runs", retired))).toBe("protocol-version-unsupported");
    for (const bad of ["", "v2", "2.", "02", "2.0.0", "2, 2", ["2", "2"]])
      expect(
        codeOf(() => negotiatedMajor(req(bad), "/runs", overlap)),
        String(bad),
      ).toBe("invalid-params");
    expect(codeOf(() => negotiatedMajor(req("2"), "/v1/runs", overlap))).toBe("protocol-version-mismatch");
  });

  it("refuses a well-formed OpenWOP-Client-Version below the floor under major 2 only", () => {
    const floor = { v1: true, minClientVersion: "2.1" };
    const withClient = (major: string | undefined, client: string): HttpRequest =>
      ({
        headers: { ...(major ? { "openwop-version": major } : {}), "openwop-client-version": client },
      }) as unknown as HttpRequest;
    expect(codeOf(() => negotiatedMajor(withClient("2", "2.0.9"), "/runs", floor))).toBe("client-version-unsupported");
    expect(codeOf(() => negotiatedMajor(withClient("2", "1.9"), "/runs", floor))).toBe("client-version-unsupported");
    for (const served of ["2.1", "2.1.0", "2.10", "3.0", "2.01", "two", ""])
      expect(negotiatedMajor(withClient("2", served), "/runs", floor), served).toBe(2);
    // Major 1 (header-less in the overlap, or /v1) follows its own frozen text: no floor.
    expect(negotiatedMajor(withClient(undefined, "0.1"), "/runs", floor)).toBe(1);
    expect(negotiatedMajor(withClient("1", "0.1"), "/v1/runs", floor)).toBe(1);
    // Header-less after retirement is major 2, and the floor applies.
    const retiredFloor = { v1: false, minClientVersion: "2.1" };
    expect(codeOf(() => negotiatedMajor(withClient(undefined, "2.0"), "/runs", retiredFloor))).toBe(
      "client-version-unsupported",
    );
  });

  it("advertises both majors with 1.x preferred through the overlap, 2.x alone after", () => {
    expect(advertisedVersions(overlap)).toEqual({ protocolVersions: ["1.0", "2.0"], preferredVersion: "1.0" });
    expect(advertisedVersions(retired)).toEqual({ protocolVersions: ["2.0"], preferredVersion: "2.0" });
  });
});
