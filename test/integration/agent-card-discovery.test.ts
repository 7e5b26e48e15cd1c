import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { A2A_03_LEGACY_WINDOW_ENDS, bareCardShape } from "../../src/a2a/agent-card-settings.js";
import { validateCapabilities } from "../../src/schemas/schema-validator.js";
import { startTestApp, type TestApp } from "../support/start-server.js";

type Obj = Record<string, any>;
/** Fields only the 0.3 shape has: a strict 1.0 client refuses a card carrying them next to supportedInterfaces. */
const V03_ONLY = [
  "url",
  "preferredTransport",
  "additionalInterfaces",
  "protocolVersion",
  "supportsAuthenticatedExtendedCard",
];
const isPure10 = (card: Obj) => Array.isArray(card["supportedInterfaces"]) && V03_ONLY.every((k) => !(k in card));
const isHybrid = (card: Obj) => card["protocolVersion"] === "0.3.0" && Array.isArray(card["supportedInterfaces"]);
/** A 0.3 card and nothing else (OpenWOP RFC 0152 §B): every 0.3 field, no 1.0 `supportedInterfaces`. */
const isPure03 = (card: Obj) =>
  card["protocolVersion"] === "0.3.0" && V03_ONLY.every((k) => k in card) && !("supportedInterfaces" in card);

describe("the agent card and the discovery document: caching, conditional requests, HEAD", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ AGENT_CARD_MAX_AGE_SECONDS: "120" });
  });
  afterAll(() => t.close());

  const documents: Array<[string, string, Record<string, string>]> = [
    ["the bare card", "/.well-known/agent-card.json", {}],
    ["the 1.0 card (header)", "/.well-known/agent-card.json", { "A2A-Version": "1.0" }],
    ["the 1.0 card (query)", "/.well-known/agent-card.json?A2A-Version=1.0", {}],
    ["the discovery document", "/.well-known/openwop", {}],
  ];

  it.each(documents)(
    "%s: Cache-Control max-age, ETag, Last-Modified; If-None-Match → 304; HEAD → headers only",
    async (_name, path, headers) => {
      const url = `${t.baseUrl}${path}`;
      const res = await fetch(url, { headers });
      expect(res.status).toBe(200);
      const body = await res.text();
      expect(JSON.parse(body)).toBeTypeOf("object");
      expect(res.headers.get("cache-control")).toBe("public, max-age=120");
      const etag = res.headers.get("etag")!;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const lastModified = res.headers.get("last-modified")!;
      expect(Date.parse(lastModified)).not.toBeNaN();

      const again = await fetch(url, { headers: { ...headers, "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
      expect((await fetch(url, { headers: { ...headers, "if-none-match": `W/${etag}, "other"` } })).status).toBe(304);
      const changed = await fetch(url, { headers: { ...headers, "if-none-match": '"something-else"' } });
      expect(changed.status).toBe(200);
      expect(await changed.text()).toBe(body);
      expect((await fetch(url, { headers: { ...headers, "if-modified-since": lastModified } })).status).toBe(304);

      const head = await fetch(url, { method: "HEAD", headers });
      expect(head.status).toBe(200);
      expect(head.headers.get("etag")).toBe(etag);
      expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(body)));
      expect(await head.text()).toBe("");
    },
  );

  it("the hybrid and the 1.0 card have different ETags (Vary: A2A-Version)", async () => {
    const bare = await fetch(`${t.baseUrl}/.well-known/agent-card.json`);
    const v10 = await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } });
    expect(bare.headers.get("vary")).toBe("A2A-Version");
    expect(bare.headers.get("etag")).not.toBe(v10.headers.get("etag"));
  });

  it("discovery's agentCardUrl serves the pure 0.3 card with no header while 0.3 is advertised, the 1.0 card to A2A-Version: 1.0", async () => {
    const doc = (await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Obj;
    validateCapabilities(doc);
    expect(doc["a2a"]["protocolVersions"]).toContain("0.3");
    const cardUrl = doc["a2a"]["agentCardUrl"] as string;
    expect(cardUrl).toBe(`${t.baseUrl}/.well-known/agent-card.json?bare=0.3`);
    // As a2a-card-runtime-consistency (openwop/openwop b675e604) reads it: header-less, the 0.3 `url` and no
    // supportedInterfaces; with A2A-Version: 1.0, the 1.0 card, whose interfaces declare discovery's versions.
    const headerless = (await (await fetch(cardUrl)).json()) as Obj;
    expect(isPure03(headerless)).toBe(true);
    expect(typeof headerless["url"]).toBe("string");
    const pure = (await (await fetch(cardUrl, { headers: { "A2A-Version": "1.0" } })).json()) as Obj;
    expect(isPure10(pure)).toBe(true);
    expect(pure["supportedInterfaces"][0]).toMatchObject({ protocolVersion: "1.0" });
    expect([...new Set((pure["supportedInterfaces"] as Obj[]).map((i) => i["protocolVersion"]))].sort()).toEqual(
      doc["a2a"]["protocolVersions"],
    );
    // The v2 document's URL names its preferredVersion, so a v2 reader gets that card header-less.
    const v2 = (await (
      await fetch(`${t.baseUrl}/.well-known/openwop`, { headers: { "OpenWOP-Version": "2" } })
    ).json()) as Obj;
    expect(isPure10((await (await fetch(v2["a2a"]["agentCardUrl"] as string)).json()) as Obj)).toBe(true);
    // Today (before 2027-03-12) the bare path serves the hybrid card, so 0.3 clients keep working.
    expect(Date.now()).toBeLessThan(Date.parse(A2A_03_LEGACY_WINDOW_ENDS));
    expect(isHybrid((await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Obj)).toBe(true);
    // An unknown `bare` is refused, as an unknown A2A-Version is.
    expect((await fetch(`${t.baseUrl}/.well-known/agent-card.json?bare=0.2`)).status).toBe(400);
  });
});

describe("AGENT_CARD_BARE chooses what the bare well-known path serves", () => {
  it("auto: hybrid until the 0.3 legacy window ends (2027-03-12), pure 1.0 from then on; hybrid, 1.0 and 0.3 force one", () => {
    const end = Date.parse(A2A_03_LEGACY_WINDOW_ENDS);
    expect(bareCardShape("auto", new Date(end - 1))).toBe("hybrid");
    expect(bareCardShape("auto", new Date(end))).toBe("1.0");
    expect(bareCardShape("hybrid", new Date(end + 1e10))).toBe("hybrid");
    expect(bareCardShape("1.0", new Date(end - 1e10))).toBe("1.0");
    expect(bareCardShape("0.3", new Date(end - 1e10))).toBe("pure-0.3");
  });

  it.each([
    ["1.0", isPure10],
    ["hybrid", isHybrid],
    ["0.3", isPure03],
  ] as const)(
    "AGENT_CARD_BARE=%s over a real server; an explicit A2A-Version still gets its own card; agentCardUrl serves what discovery says",
    async (choice, expected) => {
      const t = await startTestApp({ AGENT_CARD_BARE: choice });
      try {
        const bare = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Obj;
        expect(expected(bare)).toBe(true);
        expect(
          isHybrid(
            (await (
              await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "0.3" } })
            ).json()) as Obj,
          ),
        ).toBe(true);
        expect(
          isPure10(
            (await (
              await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })
            ).json()) as Obj,
          ),
        ).toBe(true);
        // Discovery's agentCardUrl serves the pure 0.3 card header-less whatever the bare path serves, and, asked
        // with A2A-Version: 1.0 as the RFC 0152 suite does, a card whose interfaces declare exactly its protocolVersions.
        const a2a = ((await (await fetch(`${t.baseUrl}/.well-known/openwop`)).json()) as Obj)["a2a"] as Obj;
        expect(isPure03((await (await fetch(a2a["agentCardUrl"] as string)).json()) as Obj)).toBe(true);
        const atCardUrl = (await (
          await fetch(a2a["agentCardUrl"] as string, { headers: { "A2A-Version": "1.0" } })
        ).json()) as Obj;
        expect(isPure10(atCardUrl)).toBe(true);
        expect(
          [...new Set((atCardUrl["supportedInterfaces"] as Obj[]).map((i) => i["protocolVersion"]))].sort(),
        ).toEqual(a2a["protocolVersions"]);
        expect(atCardUrl["capabilities"]["streaming"]).toBe(a2a["streaming"]);
        expect(atCardUrl["capabilities"]["pushNotifications"]).toBe(a2a["pushNotifications"]);
      } finally {
        await t.close();
      }
    },
  );

  it("AGENT_CARD_BARE=0.3: the pure 0.3 card lists the same interfaces as the hybrid one, without the 1.0 ones", async () => {
    const t = await startTestApp({ AGENT_CARD_BARE: "0.3" });
    try {
      const bare = (await (await fetch(`${t.baseUrl}/.well-known/agent-card.json`)).json()) as Obj;
      const hybrid = (await (
        await fetch(`${t.baseUrl}/.well-known/agent-card.json`, { headers: { "A2A-Version": "0.3" } })
      ).json()) as Obj;
      const { supportedInterfaces: _dropped, ...hybridWithout } = hybrid;
      expect(bare).toEqual(hybridWithout);
      expect(bare["url"]).toMatch(/\/a2a\/jsonrpc$/);
    } finally {
      await t.close();
    }
  });
});
