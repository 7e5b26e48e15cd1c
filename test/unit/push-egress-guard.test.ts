import { describe, expect, it } from "vitest";
import {
  EgressRefusedError,
  EgressResolutionError,
  checkEgressUrl,
  checkEgressUrlSyntax,
  type EgressArm,
  type EgressPolicy,
  type ResolvedAddress,
  type Resolver,
} from "../../src/egress/egress-guard.js";

// The guard as push uses it: refusals name the "push URL".
const checkPushUrl = (url: string, policy: EgressPolicy, resolve?: Resolver) =>
  checkEgressUrl(url, policy, "push", resolve);
const checkPushUrlSyntax = (url: string, policy: EgressPolicy) => checkEgressUrlSyntax(url, policy, "push");

const STRICT: EgressPolicy = { allowHttpLoopback: false, allowedPorts: [], allowHosts: [], denyHosts: [] };
const LOOPBACK_TEST: EgressPolicy = { ...STRICT, allowHttpLoopback: true };

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

/** Fake DNS: every name the corpus uses; anything else is NXDOMAIN. */
const ZONE: Record<string, ResolvedAddress[]> = {
  "hooks.example.com": [v4("93.184.216.34")],
  "hooks.example.org": [v4("93.184.216.35")],
  "push.example.com": [v4("93.184.216.36")],
  "xn--bcher-kva.example": [v4("93.184.216.37")],
  "public6.example.com": [v6("2606:4700:4700::1111")],
  "dual.example.com": [v4("93.184.216.34"), v6("2606:2800:220:1:248:1893:25c8:1946")],
  "nat64pub.example.com": [v6("64:ff9b::5db8:d822")],
  "blocked.example.com": [v4("93.184.216.40")],
  "a.b.evil.example": [v4("93.184.216.41")],
  // hostile answers
  "rebind.example.com": [v4("127.0.0.1")],
  "private.example.com": [v4("10.1.2.3")],
  "private172.example.com": [v4("172.20.0.4")],
  "private192.example.com": [v4("192.168.0.10")],
  "meta.example.com": [v4("169.254.169.254")],
  "mixed.example.com": [v4("93.184.216.34"), v4("192.168.1.10")],
  "mixed6.example.com": [v6("2606:4700::1"), v6("fd00::1")],
  "v6loop.example.com": [v6("::1")],
  "mapped.example.com": [v6("::ffff:127.0.0.1")],
  "cgnat.example.com": [v4("100.64.0.1")],
  "nat64.example.com": [v6("64:ff9b::a00:1")],
  "zero.example.com": [v4("0.0.0.0")],
  "garbage.example.com": [v4("not-an-ip")],
  "ec2v6.example.com": [v6("fd00:ec2::254")],
  "linklocal6.example.com": [v6("fe80::1")],
  "multicast.example.com": [v4("224.0.0.251")],
  "scoped.example.com": [v6("fe80::1%eth0")],
  localhost: [v4("127.0.0.1"), v6("::1")],
  "hook.test": [v4("127.0.0.1")],
  "public.test": [v4("93.184.216.34")],
};

function fakeResolver(): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const answer = ZONE[hostname];
    if (answer === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return answer;
  };
  return Object.assign(fn, { calls });
}

async function refusal(
  url: string,
  policy: EgressPolicy = STRICT,
  resolve: Resolver = fakeResolver(),
): Promise<EgressRefusedError> {
  try {
    await checkPushUrl(url, policy, resolve);
  } catch (err) {
    if (err instanceof EgressRefusedError) return err;
    throw err;
  }
  throw new Error(`expected ${url} to be refused`);
}

// [url, expected arm]
const HOSTILE: Array<[string, EgressArm]> = [
  // --- url arm ---
  ["not a url", "url"],
  ["/relative/push", "url"],
  ["", "url"],
  ["https://user:pass@hooks.example.com/a2a", "url"],
  ["https://user@hooks.example.com/a2a", "url"],
  ["https://:secret@hooks.example.com/a2a", "url"],
  ["https://@hooks.example.com/a2a", "url"],
  ["https://evil.example@hooks.example.com/a2a", "url"],
  ["https://hooks.example.com\t/a2a", "url"],
  [" https://hooks.example.com/a2a", "url"],
  ["https://hooks.example.com/a2a\n", "url"],
  ["https://hooks.example.com/a2a\u0000", "url"],
  [`https://hooks.example.com/${"a".repeat(2100)}`, "url"],
  ["https://[fe80::1%25eth0]/", "url"],
  ["https://hooks.example.com:99999/", "url"],
  ["https://1.2.3.4.5/", "url"],
  ["https://exa%00mple.com/", "url"],
  ["https://a..b.example.com/", "url"],
  ["https://.example.com/", "url"],
  ["https://hooks.example.com../", "url"],
  [`https://${"a".repeat(64)}.example.com/`, "url"],
  ["https://a$b.example.com/", "url"],
  ["https://foo.123/", "url"],
  // --- scheme arm ---
  ["http://push.example.com/push", "scheme"], // conformance scheme-arm leg
  ["http://hooks.example.com/a2a", "scheme"],
  ["HTTP://HOOKS.EXAMPLE.COM/a2a", "scheme"],
  ["http://127.0.0.1/", "scheme"],
  ["http://2130706433/", "scheme"],
  ["ftp://hooks.example.com/", "scheme"],
  ["file:///etc/passwd", "scheme"],
  ["gopher://hooks.example.com:70/_", "scheme"],
  ["dict://127.0.0.1:11211/", "scheme"],
  ["javascript:alert(1)", "scheme"],
  ["data:text/plain,hello", "scheme"],
  ["ws://hooks.example.com/", "scheme"],
  ["wss://hooks.example.com/", "scheme"],
  // --- address arm: literal IPv4 in every spelling ---
  ["https://10.0.0.5/push", "address"], // conformance address-arm leg
  ["https://127.0.0.1/", "address"],
  ["https://127.0.0.1./", "address"],
  ["https://2130706433/", "address"],
  ["https://0177.0.0.1/", "address"],
  ["https://0x7f.1/", "address"],
  ["https://0x7f000001/", "address"],
  ["https://0x7f.0x0.0x0.0x1/", "address"],
  ["https://127.1/", "address"],
  ["https://%31%32%37.0.0.1/", "address"],
  ["https://\uff11\uff12\uff17.0.0.1/", "address"], // full-width digits
  ["https://127\u30020\u30020\u30021/", "address"], // ideographic full stops
  ["https://0.0.0.0/", "address"],
  ["https://0/", "address"],
  ["https://172.16.0.1/", "address"],
  ["https://172.31.255.255/", "address"],
  ["https://192.168.1.1/", "address"],
  ["https://169.254.169.254/latest/meta-data/", "address"],
  ["https://169.254.1.1/", "address"],
  ["https://100.64.0.1/", "address"],
  ["https://100.127.255.254/", "address"],
  ["https://224.0.0.1/", "address"],
  ["https://239.255.255.250/", "address"],
  ["https://255.255.255.255/", "address"],
  ["https://240.0.0.1/", "address"],
  ["https://192.0.0.8/", "address"],
  ["https://198.18.0.1/", "address"],
  ["https://198.19.255.1/", "address"],
  ["https://192.0.2.1/", "address"],
  ["https://198.51.100.7/", "address"],
  ["https://203.0.113.9/", "address"],
  // --- address arm: literal IPv6 ---
  ["https://[::1]/", "address"],
  ["https://[0:0:0:0:0:0:0:1]/", "address"],
  ["https://[::]/", "address"],
  ["https://[::ffff:127.0.0.1]/", "address"],
  ["https://[::ffff:7f00:1]/", "address"],
  ["https://[0:0:0:0:0:ffff:10.0.0.1]/", "address"],
  ["https://[::ffff:a9fe:a9fe]/", "address"],
  ["https://[::ffff:8.8.8.8]/", "address"], // mapped is refused even when the IPv4 is public
  ["https://[::127.0.0.1]/", "address"], // IPv4-compatible
  ["https://[fe80::1]/", "address"],
  ["https://[febf::1]/", "address"],
  ["https://[fc00::1]/", "address"],
  ["https://[fd12:3456::1]/", "address"],
  ["https://[fd00:ec2::254]/", "address"],
  ["https://[fec0::1]/", "address"],
  ["https://[ff02::1]/", "address"],
  ["https://[2001:db8::1]/", "address"],
  ["https://[100::1]/", "address"],
  ["https://[64:ff9b::7f00:1]/", "address"], // NAT64 → 127.0.0.1
  ["https://[64:ff9b::a9fe:a9fe]/", "address"], // NAT64 → 169.254.169.254
  ["https://[64:ff9b:1::a00:1]/", "address"], // local-use NAT64
  ["https://[2002:a00:1::]/", "address"], // 6to4 → 10.0.0.1
  ["https://[2002:c0a8:101::1]/", "address"], // 6to4 → 192.168.1.1
  ["https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "address"], // Teredo client → 127.0.0.1
  ["https://[2001:0:a00:1::1]/", "address"], // Teredo server → 10.0.0.1
  ["https://[4000::1]/", "address"], // outside 2000::/3
  // --- address arm: names ---
  ["https://localhost/", "address"],
  ["https://LOCALHOST/", "address"],
  ["https://localhost./", "address"],
  ["https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "address"], // full-width "localhost"
  ["https://api.localhost/", "address"],
  ["https://metadata/computeMetadata/v1/", "address"],
  ["https://metadata.google.internal/computeMetadata/v1/", "address"],
  ["https://METADATA.GOOGLE.INTERNAL./", "address"],
  ["https://metadata.goog/", "address"],
  ["https://instance-data/", "address"],
  ["https://db.internal/", "address"],
  ["https://printer.local/", "address"],
  ["https://router.home.arpa/", "address"],
  ["https://intranet/", "address"],
  // --- address arm: names whose DNS answers are refused ---
  ["https://rebind.example.com/", "address"],
  ["https://private.example.com/", "address"],
  ["https://private172.example.com/", "address"],
  ["https://private192.example.com/", "address"],
  ["https://meta.example.com/", "address"],
  ["https://mixed.example.com/", "address"], // one public + one private answer
  ["https://mixed6.example.com/", "address"],
  ["https://v6loop.example.com/", "address"],
  ["https://mapped.example.com/", "address"],
  ["https://cgnat.example.com/", "address"],
  ["https://nat64.example.com/", "address"],
  ["https://zero.example.com/", "address"],
  ["https://garbage.example.com/", "address"],
  ["https://ec2v6.example.com/", "address"],
  ["https://linklocal6.example.com/", "address"],
  ["https://multicast.example.com/", "address"],
  ["https://scoped.example.com/", "address"],
  // --- port arm ---
  ["https://hooks.example.com:8443/a2a", "port"],
  ["https://hooks.example.com:80/a2a", "port"],
  ["https://hooks.example.com:22/", "port"],
  ["https://hooks.example.com:444/", "port"],
  ["https://93.184.216.34:6379/", "port"],
  ["https://[2606:4700:4700::1111]:8080/", "port"],
];

const ALLOWED: Array<[string, string[]]> = [
  ["https://hooks.example.com/a2a", ["93.184.216.34"]],
  ["https://hooks.example.com:443/a2a", ["93.184.216.34"]],
  ["https://HOOKS.Example.COM/a2a?x=1#frag", ["93.184.216.34"]],
  ["https://hooks.example.com./a2a", ["93.184.216.34"]],
  ["https://hooks.example.com/a2a?token=abc&x=%20", ["93.184.216.34"]],
  ["https://bücher.example/push", ["93.184.216.37"]],
  ["https://93.184.216.34/x", ["93.184.216.34"]],
  ["https://1.1.1.1/", ["1.1.1.1"]],
  ["https://8.8.8.8/hook", ["8.8.8.8"]],
  ["https://172.32.0.1/", ["172.32.0.1"]],
  ["https://100.128.0.1/", ["100.128.0.1"]],
  ["https://[2606:4700:4700::1111]/", ["2606:4700:4700::1111"]],
  ["https://[2001:4860:4860::8888]/push", ["2001:4860:4860::8888"]],
  ["https://[64:ff9b::5db8:d822]/", ["64:ff9b::5db8:d822"]],
  ["https://[2002:5db8:d822::1]/", ["2002:5db8:d822::1"]],
  ["https://public6.example.com/", ["2606:4700:4700::1111"]],
  ["https://dual.example.com/", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]],
  ["https://nat64pub.example.com/", ["64:ff9b::5db8:d822"]],
];

describe("checkPushUrl — hostile corpus", () => {
  it("has a corpus of at least 60 hostile URLs covering every arm", () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(60);
    expect(new Set(HOSTILE.map(([, arm]) => arm))).toEqual(new Set(["url", "scheme", "address", "port"]));
  });

  it.each(HOSTILE)("refuses %j by the %s arm", async (url, arm) => {
    const err = await refusal(url);
    expect(err.arm).toBe(arm);
    expect(err.message.startsWith(`push URL refused by the ${arm} arm: `)).toBe(true);
    expect(err.name).toBe("EgressRefusedError");
  });
});

describe("checkPushUrl — allowed corpus", () => {
  it("has at least 15 allowed URLs", () => {
    expect(ALLOWED.length).toBeGreaterThanOrEqual(15);
  });

  it.each(ALLOWED)("allows %j", async (url, expected) => {
    const { url: parsed, addresses } = await checkPushUrl(url, STRICT, fakeResolver());
    expect(addresses.map((a) => a.address)).toEqual(expected);
    expect(parsed.protocol).toBe("https:");
    expect(parsed.hash).toBe("");
  });
});

describe("messages", () => {
  it("names the arm and the reason in plain words", async () => {
    const err = await refusal("https://metadata.google.internal/computeMetadata/v1/");
    expect(err.message).toBe("push URL refused by the address arm: metadata.google.internal is a cloud metadata host");
    expect((await refusal("https://169.254.169.254/")).message).toBe(
      "push URL refused by the address arm: 169.254.169.254 is a cloud metadata address",
    );
    expect((await refusal("https://10.0.0.5/push")).message).toBe(
      "push URL refused by the address arm: 10.0.0.5 is a private (RFC 1918) address",
    );
    expect((await refusal("https://mixed.example.com/")).message).toContain("resolves to 192.168.1.10");
    expect((await refusal("https://[::ffff:127.0.0.1]/")).message).toContain("embeds 127.0.0.1");
  });

  it("never echoes the path, query or userinfo", async () => {
    const secret = "sekrit-token-123";
    const urls = [
      `https://10.0.0.5/pathpart/${secret}?token=${secret}`,
      `http://push.example.com/pathpart?token=${secret}`,
      `https://hooks.example.com:8443/pathpart?token=${secret}`,
      `https://user:${secret}@hooks.example.com/pathpart`,
      `https://private.example.com/pathpart?token=${secret}`,
      `https://hooks.example.com/pathpart?token=${secret} `,
      `https://hooks.example.com/pathpart/${"a".repeat(2100)}?token=${secret}`,
      `ftp://hooks.example.com/pathpart?token=${secret}`,
    ];
    for (const url of urls) {
      const err = await refusal(url);
      expect(err.message).not.toContain(secret);
      expect(err.message).not.toContain("pathpart");
      expect(err.message).not.toContain("token");
    }
  });
});

describe("checkPushUrlSyntax (runs before any task lookup, no DNS)", () => {
  it("refuses both conformance legs synchronously with the right arm", () => {
    const arm = (url: string): EgressArm | undefined => {
      try {
        checkPushUrlSyntax(url, STRICT);
        return undefined;
      } catch (err) {
        return (err as EgressRefusedError).arm;
      }
    };
    expect(arm("https://10.0.0.5/push")).toBe("address");
    expect(arm("http://push.example.com/push")).toBe("scheme");
    expect(arm("https://metadata.google.internal/")).toBe("address");
    expect(arm("https://hooks.example.com:8443/")).toBe("port");
    expect(arm("https://u:p@hooks.example.com/")).toBe("url");
  });

  it("accepts a name whose answer is only known after DNS, and drops the fragment", () => {
    const url = checkPushUrlSyntax("https://rebind.example.com/a2a?x=1#f", STRICT);
    expect(url.href).toBe("https://rebind.example.com/a2a?x=1");
  });

  it("refuses synchronously for every literal/name row of the hostile corpus", () => {
    const dnsRows = new Set(Object.keys(ZONE).map((name) => `https://${name}/`));
    for (const [url, arm] of HOSTILE) {
      if (dnsRows.has(url)) continue;
      expect(() => checkPushUrlSyntax(url, STRICT), url).toThrow(EgressRefusedError);
      try {
        checkPushUrlSyntax(url, STRICT);
      } catch (err) {
        expect((err as EgressRefusedError).arm, url).toBe(arm);
      }
    }
  });
});

describe("resolution", () => {
  it("asks the resolver exactly once per check for a name, never for a literal", async () => {
    const resolve = fakeResolver();
    await checkPushUrl("https://hooks.example.com/a", STRICT, resolve);
    await checkPushUrl("https://hooks.example.com./b", STRICT, resolve);
    await checkPushUrl("https://93.184.216.34/", STRICT, resolve);
    await expect(checkPushUrl("https://10.0.0.5/", STRICT, resolve)).rejects.toThrow(EgressRefusedError);
    expect(resolve.calls).toEqual(["hooks.example.com", "hooks.example.com"]);
  });

  it("reports an unresolvable name as EgressResolutionError, not a refusal", async () => {
    const err = await checkPushUrl("https://nxdomain.example.com/", STRICT, fakeResolver()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EgressResolutionError);
    expect((err as EgressResolutionError).code).toBe("ENOTFOUND");
    const empty = await checkPushUrl("https://x.example.com/", STRICT, async () => []).catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(EgressResolutionError);
  });

  it("re-resolves on every call, so a rebinding answer is caught at delivery time", async () => {
    let answer = v4("93.184.216.34");
    const resolve: Resolver = async () => [answer];
    await expect(checkPushUrl("https://flip.example.com/", STRICT, resolve)).resolves.toBeDefined();
    answer = v4("127.0.0.1");
    await expect(checkPushUrl("https://flip.example.com/", STRICT, resolve)).rejects.toMatchObject({ arm: "address" });
  });
});

describe("policy arm", () => {
  const DENY: EgressPolicy = { ...STRICT, denyHosts: ["blocked.example.com", "*.evil.example", "93.184.216.0/24"] };

  it.each<[string, string]>([
    ["https://blocked.example.com/", "blocked.example.com is on the push deny list"],
    ["https://BLOCKED.example.com./", "blocked.example.com is on the push deny list"],
    ["https://a.b.evil.example/", "a.b.evil.example is on the push deny list"],
    ["https://93.184.216.34/", "93.184.216.34 is on the push deny list"],
    ["https://hooks.example.com/", "hooks.example.com resolves to 93.184.216.34, which is on the push deny list"],
  ])("deny list refuses %j", async (url, reason) => {
    const err = await refusal(url, DENY);
    expect(err.arm).toBe("policy");
    expect(err.reason).toBe(reason);
  });

  it("deny list does not match the apex of a *. pattern or unrelated hosts", async () => {
    const policy: EgressPolicy = { ...STRICT, denyHosts: ["*.example.com"] };
    await expect(checkPushUrl("https://hooks.example.org/", policy, fakeResolver())).resolves.toBeDefined();
    await expect(refusal("https://hooks.example.com/", policy)).resolves.toMatchObject({ arm: "policy" });
  });

  it("allow list: the host must match an entry", async () => {
    const policy: EgressPolicy = { ...STRICT, allowHosts: ["*.example.com", "hooks.example.org", "1.1.1.1"] };
    const resolve = fakeResolver();
    await expect(checkPushUrl("https://hooks.example.com/a2a", policy, resolve)).resolves.toBeDefined();
    await expect(checkPushUrl("https://hooks.example.org/a2a", policy, resolve)).resolves.toBeDefined();
    await expect(checkPushUrl("https://1.1.1.1/", policy, resolve)).resolves.toBeDefined();
    const notListed = await refusal("https://bücher.example/", policy);
    expect(notListed.arm).toBe("policy");
    expect(notListed.reason).toBe("xn--bcher-kva.example is not on the push allow list");
    await expect(refusal("https://8.8.8.8/", policy)).resolves.toMatchObject({ arm: "policy" });
    // Being allow-listed never lifts the address arm.
    await expect(refusal("https://rebind.example.com/", policy)).resolves.toMatchObject({ arm: "address" });
    await expect(refusal("https://10.0.0.5/", { ...STRICT, allowHosts: ["10.0.0.5"] })).resolves.toMatchObject({
      arm: "address",
    });
  });

  it("deny list wins over the allow list", async () => {
    const policy: EgressPolicy = { ...STRICT, allowHosts: ["*.example.com"], denyHosts: ["hooks.example.com"] };
    await expect(refusal("https://hooks.example.com/", policy)).resolves.toMatchObject({ arm: "policy" });
  });

  it("rejects malformed patterns loudly instead of silently not matching", async () => {
    for (const bad of ["*", "*.", "a.*.example.com", "", "10.0.0.0/99"]) {
      await expect(
        checkPushUrl("https://hooks.example.com/", { ...STRICT, denyHosts: [bad] }, fakeResolver()),
      ).rejects.toThrow(TypeError);
    }
  });
});

describe("port arm", () => {
  it("allows configured non-default ports", async () => {
    const policy: EgressPolicy = { ...STRICT, allowedPorts: [8443] };
    await expect(checkPushUrl("https://hooks.example.com:8443/", policy, fakeResolver())).resolves.toBeDefined();
    await expect(refusal("https://hooks.example.com:8444/", policy)).resolves.toMatchObject({ arm: "port" });
  });
});

describe("allowHttpLoopback (test-only policy)", () => {
  it.each([
    "http://127.0.0.1:8080/hook",
    "http://127.0.0.1/",
    "http://127.5.6.7:1234/",
    "http://[::1]:9000/",
    "https://127.0.0.1:4443/",
    "http://localhost:3000/",
    "http://hook.test:3000/a2a",
  ])("permits %j", async (url) => {
    const { addresses } = await checkPushUrl(url, LOOPBACK_TEST, fakeResolver());
    expect(
      addresses.every((a) => a.address === "127.0.0.1" || a.address.startsWith("127.") || a.address === "::1"),
    ).toBe(true);
  });

  it("still allows public https targets on the default port", async () => {
    await expect(checkPushUrl("https://hooks.example.com/", LOOPBACK_TEST, fakeResolver())).resolves.toBeDefined();
  });

  it.each<[string, EgressArm]>([
    ["http://10.0.0.5/", "scheme"],
    ["http://169.254.169.254/", "scheme"],
    ["https://10.0.0.5/", "address"],
    ["https://169.254.169.254/latest/meta-data/", "address"],
    ["https://192.168.1.1:8080/", "address"],
    ["https://[::ffff:127.0.0.1]/", "address"], // only 127/8 and ::1 themselves, no mapped form
    ["http://[::ffff:127.0.0.1]/", "scheme"],
    ["https://[64:ff9b::7f00:1]/", "address"],
    ["https://metadata.google.internal/", "address"],
    ["http://push.example.com/push", "scheme"], // http to a public name
    ["http://public.test:8080/", "scheme"],
    ["https://public.test:8080/", "port"], // any port only on loopback
    ["https://private.example.com/", "address"],
    ["https://mixed.example.com/", "address"],
    ["http://user:pw@127.0.0.1:8080/", "url"],
  ])("still refuses %j (%s arm)", async (url, arm) => {
    await expect(refusal(url, LOOPBACK_TEST)).resolves.toMatchObject({ arm });
  });

  it("refuses a loopback name that resolves elsewhere", async () => {
    const resolve: Resolver = async () => [v4("93.184.216.34")];
    await expect(refusal("https://localhost/", LOOPBACK_TEST, resolve)).resolves.toMatchObject({ arm: "address" });
  });
});

describe("the subject of a check", () => {
  it("names what was checked: a peer URL is refused and unresolved as a peer URL, with the peer deny list", async () => {
    const refused = await checkEgressUrl("https://10.0.0.5/", STRICT, "peer").catch((e: unknown) => e);
    expect((refused as Error).message).toBe(
      "peer URL refused by the address arm: 10.0.0.5 is a private (RFC 1918) address",
    );
    const denied = await checkEgressUrl(
      "https://hooks.example.com/",
      { ...STRICT, denyHosts: ["hooks.example.com"] },
      "peer",
      fakeResolver(),
    ).catch((e: unknown) => e);
    expect((denied as EgressRefusedError).reason).toBe("hooks.example.com is on the peer deny list");
    const unresolved = await checkEgressUrl("https://nxdomain.example.com/", STRICT, "peer", fakeResolver()).catch(
      (e: unknown) => e,
    );
    expect(unresolved).toBeInstanceOf(EgressResolutionError);
    expect((unresolved as Error).message).toMatch(/^peer URL host nxdomain\.example\.com could not be resolved/);
    expect(() => checkEgressUrlSyntax("http://hooks.example.com/", STRICT, "peer")).toThrow(
      "peer URL refused by the scheme arm: http is not allowed for http://hooks.example.com; peer URLs must use https",
    );
  });
});
