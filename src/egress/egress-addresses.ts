/**
 * What the egress guard knows about names and addresses: internal names, the refused IPv4/IPv6 ranges (with the
 * IPv6 transition prefixes unwrapped), and the host patterns of allow/deny lists.
 */
import ipaddr from "ipaddr.js";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;
export type IP = IPv4 | IPv6;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/** Cloud instance-metadata host names (exact match after lower-casing and dropping a trailing dot). */
export const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata", // GCP short name, also used by other clouds' search domains
  "metadata.google.internal", // GCP
  "metadata.goog", // GCP
  "instance-data", // AWS (EC2 classic name)
  "instance-data.ec2.internal", // AWS
]);

/** Name suffixes that only ever resolve inside a private network. */
export const PRIVATE_SUFFIXES: ReadonlyArray<readonly [suffix: string, why: string]> = [
  [".internal", "a private-use name (.internal)"],
  [".local", "a multicast-DNS name (.local)"],
  [".localdomain", "a local-only name (.localdomain)"],
  [".home.arpa", "a home-network name (.home.arpa)"],
];

export function isLoopbackName(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost");
}

export const DNS_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

export type Cidr = [IP, number];

function cidr(text: string): Cidr {
  return ipaddr.parseCIDR(text);
}

/** IPv4 ranges refused, most specific first. Anything ipaddr does not call "unicast" is refused too. */
export const V4_REFUSED: ReadonlyArray<readonly [Cidr, string]> = [
  [cidr("169.254.169.254/32"), "a cloud metadata address"],
  [cidr("0.0.0.0/8"), 'an unspecified ("this network") address'],
  [cidr("127.0.0.0/8"), "a loopback address"],
  [cidr("10.0.0.0/8"), "a private (RFC 1918) address"],
  [cidr("172.16.0.0/12"), "a private (RFC 1918) address"],
  [cidr("192.168.0.0/16"), "a private (RFC 1918) address"],
  [cidr("100.64.0.0/10"), "a carrier-grade NAT (RFC 6598) address"],
  [cidr("169.254.0.0/16"), "a link-local address"],
  [cidr("192.0.0.0/24"), "an IETF protocol-assignment (reserved) address"],
  [cidr("192.0.2.0/24"), "a documentation (TEST-NET-1) address"],
  [cidr("198.51.100.0/24"), "a documentation (TEST-NET-2) address"],
  [cidr("203.0.113.0/24"), "a documentation (TEST-NET-3) address"],
  [cidr("198.18.0.0/15"), "a benchmarking (RFC 2544) address"],
  [cidr("192.88.99.0/24"), "a deprecated 6to4 relay anycast address"],
  [cidr("224.0.0.0/4"), "a multicast address"],
  [cidr("255.255.255.255/32"), "the broadcast address"],
  [cidr("240.0.0.0/4"), "a reserved (240.0.0.0/4) address"],
];

const V4_LOOPBACK = cidr("127.0.0.0/8");
const V6_LOOPBACK = cidr("::1/128");
const V6_UNSPECIFIED_OR_LOOPBACK = cidr("::/127");
export const V6_GLOBAL_UNICAST = cidr("2000::/3");
const V6_MAPPED = cidr("::ffff:0:0/96");
const V6_TRANSLATED = cidr("::ffff:0:0:0/96");
const V6_COMPATIBLE = cidr("::/96");
const V6_NAT64 = cidr("64:ff9b::/96");
const V6_6TO4 = cidr("2002::/16");
const V6_TEREDO = cidr("2001::/32");

/** IPv6 ranges refused outright (the unwrap cases above are handled before these). */
export const V6_REFUSED: ReadonlyArray<readonly [Cidr, string]> = [
  [cidr("::/128"), "the unspecified address"],
  [cidr("::1/128"), "a loopback address"],
  [cidr("fd00:ec2::254/128"), "a cloud metadata address"],
  [cidr("64:ff9b:1::/48"), "a local-use NAT64 (RFC 8215) address"],
  [cidr("100::/64"), "a discard-only (RFC 6666) address"],
  [cidr("2001:db8::/32"), "a documentation address"],
  [cidr("3fff::/20"), "a documentation address"],
  [cidr("2001:2::/48"), "a benchmarking address"],
  [cidr("2001::/23"), "an IETF protocol-assignment (reserved) address"],
  [cidr("fc00::/7"), "a unique-local (private) address"],
  [cidr("fe80::/10"), "a link-local address"],
  [cidr("fec0::/10"), "a site-local (deprecated) address"],
  [cidr("ff00::/8"), "a multicast address"],
];

type Verdict = { ok: true; loopback: boolean } | { ok: false; reason: string };

function matches(ip: IP, range: Cidr): boolean {
  return ip.kind() === range[0].kind() && ip.match(range);
}

function classifyV4(ip: IPv4, allowLoopback: boolean): Verdict {
  if (allowLoopback && matches(ip, V4_LOOPBACK)) return { ok: true, loopback: true };
  for (const [range, reason] of V4_REFUSED) {
    if (matches(ip, range)) return { ok: false, reason };
  }
  const range = ip.range();
  if (range !== "unicast") return { ok: false, reason: `a special-purpose (${range}) address` };
  return { ok: true, loopback: false };
}

function v4FromParts(hi: number, lo: number): IPv4 {
  return new ipaddr.IPv4([(hi >> 8) & 0xff, hi & 0xff, (lo >> 8) & 0xff, lo & 0xff]);
}

/** Refuse an IPv6 address that embeds a refused IPv4; the embedded IPv4 never gets the loopback exemption. */
function checkEmbedded(kind: string, embedded: IPv4[]): Verdict {
  for (const v4 of embedded) {
    const inner = classifyV4(v4, false);
    if (!inner.ok) return { ok: false, reason: `${kind} embedding ${v4.toString()}, ${inner.reason}` };
  }
  return { ok: true, loopback: false };
}

function classifyV6(ip: IPv6, allowLoopback: boolean): Verdict {
  if (ip.zoneId !== undefined && ip.zoneId !== "") return { ok: false, reason: "a scoped address with a zone id" };
  const p = ip.parts;
  if (allowLoopback && matches(ip, V6_LOOPBACK)) return { ok: true, loopback: true };

  if (matches(ip, V6_MAPPED)) {
    const v4 = ip.toIPv4Address();
    const inner = classifyV4(v4, false);
    const suffix = inner.ok ? "" : `, ${inner.reason}`;
    return { ok: false, reason: `an IPv4-mapped IPv6 address (embeds ${v4.toString()}${suffix})` };
  }
  if (matches(ip, V6_TRANSLATED)) return { ok: false, reason: "an IPv4-translated (RFC 6145) address" };
  if (!matches(ip, V6_UNSPECIFIED_OR_LOOPBACK) && matches(ip, V6_COMPATIBLE)) {
    return {
      ok: false,
      reason: `an IPv4-compatible IPv6 address (deprecated; embeds ${v4FromParts(p[6] ?? 0, p[7] ?? 0).toString()})`,
    };
  }
  // Transition prefixes: unwrap the embedded IPv4 and judge it. DNS64 networks legitimately answer
  // 64:ff9b::/96 for public hosts, so a public embedded address is allowed.
  if (matches(ip, V6_NAT64)) return checkEmbedded("a NAT64 address", [v4FromParts(p[6] ?? 0, p[7] ?? 0)]);
  if (matches(ip, V6_6TO4)) return checkEmbedded("a 6to4 address", [v4FromParts(p[1] ?? 0, p[2] ?? 0)]);
  if (matches(ip, V6_TEREDO)) {
    // Teredo: server IPv4 in bits 32–63, client IPv4 (bit-inverted) in bits 96–127.
    const server = v4FromParts(p[2] ?? 0, p[3] ?? 0);
    const client = v4FromParts(~(p[6] ?? 0) & 0xffff, ~(p[7] ?? 0) & 0xffff);
    return checkEmbedded("a Teredo address", [client, server]);
  }
  for (const [range, reason] of V6_REFUSED) {
    if (matches(ip, range)) return { ok: false, reason };
  }
  if (!matches(ip, V6_GLOBAL_UNICAST)) return { ok: false, reason: "not a global unicast address" };
  const range = ip.range();
  if (range !== "unicast") return { ok: false, reason: `a special-purpose (${range}) address` };
  return { ok: true, loopback: false };
}

export function classify(ip: IP, allowLoopback: boolean): Verdict {
  return ip.kind() === "ipv4" ? classifyV4(ip as IPv4, allowLoopback) : classifyV6(ip as IPv6, allowLoopback);
}

/** Parse an address string as returned by a resolver (no brackets; a "%zone" suffix is kept and refused). */
export function parseAddress(text: string): IP | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (ipaddr.IPv6.isValid(bare)) return ipaddr.IPv6.parse(bare);
  return undefined;
}

/** Canonical text: dotted quad for IPv4 and IPv4-mapped, RFC 5952 for IPv6. */
export function formatIp(ip: IP): string {
  return ip.kind() === "ipv4" ? ip.toString() : (ip as IPv6).toRFC5952String();
}

// ---------------------------------------------------------------------------------------------
// Host patterns (allow/deny lists)
// ---------------------------------------------------------------------------------------------

export type HostPattern =
  { kind: "exact"; name: string } | { kind: "suffix"; suffix: string } | { kind: "cidr"; range: Cidr };

function normalizeName(text: string): string {
  let name = text.trim().toLowerCase();
  if (name.startsWith("[") && name.endsWith("]")) name = name.slice(1, -1);
  if (name.endsWith(".")) name = name.slice(0, -1);
  return name;
}

export function compilePattern(entry: string): HostPattern {
  const text = normalizeName(entry);
  if (text.startsWith("*.")) {
    const rest = text.slice(2);
    if (rest === "" || rest.includes("*") || !DNS_NAME.test(rest)) {
      throw new TypeError(`invalid egress policy host pattern: ${JSON.stringify(entry)}`);
    }
    return { kind: "suffix", suffix: `.${rest}` };
  }
  if (text.includes("/")) {
    if (!ipaddr.isValidCIDR(text)) throw new TypeError(`invalid egress policy CIDR: ${JSON.stringify(entry)}`);
    return { kind: "cidr", range: ipaddr.parseCIDR(text) };
  }
  const ip = parseAddress(text);
  if (ip) return { kind: "cidr", range: [ip, ip.kind() === "ipv4" ? 32 : 128] };
  if (text === "" || !DNS_NAME.test(text)) {
    throw new TypeError(`invalid egress policy host pattern: ${JSON.stringify(entry)}`);
  }
  return { kind: "exact", name: text };
}

export function patternMatchesHost(pattern: HostPattern, name: string, literal: IP | undefined): boolean {
  switch (pattern.kind) {
    case "exact":
      return literal === undefined && name === pattern.name;
    case "suffix":
      return literal === undefined && name.endsWith(pattern.suffix);
    case "cidr":
      return literal !== undefined && matchesUnmapped(literal, pattern.range);
  }
}

/** CIDR match that also sees through IPv4-mapped IPv6 (::ffff:10.0.0.1 matches 10.0.0.0/8). */
export function matchesUnmapped(ip: IP, range: Cidr): boolean {
  if (matches(ip, range)) return true;
  if (ip.kind() === "ipv6" && (ip as IPv6).isIPv4MappedAddress()) return matches((ip as IPv6).toIPv4Address(), range);
  return false;
}

// ---------------------------------------------------------------------------------------------
// Private services (an operator's host:port and CIDR:port entries, e.g. HTTP_NODE_PRIVATE_HOSTS)
// ---------------------------------------------------------------------------------------------

/** A private service the operator names: an exact host name or an IP/CIDR, on exactly one port. */
export interface PrivateService {
  pattern: Extract<HostPattern, { kind: "exact" | "cidr" }>;
  port: number;
}

/**
 * `host:port`, `10.0.0.0/8:8080`, `[fd00::1]:8080` or `[fd00::/64]:8080`. The port is required: a listed service
 * is one port, never a whole host. Wildcards are refused (name each service). Throws TypeError.
 */
export function compilePrivateService(entry: string): PrivateService {
  const text = entry.trim().toLowerCase();
  const bad = (why: string) => new TypeError(`invalid private service ${JSON.stringify(entry)}: ${why}`);
  const split = text.startsWith("[") ? /^\[([^\]]+)\]:([0-9]+)$/.exec(text) : /^([^:[\]]+):([0-9]+)$/.exec(text);
  if (!split) throw bad("expected host:port, ip:port, cidr:port or [ipv6]:port");
  const [, host = "", portText = ""] = split;
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw bad("the port must be 1-65535");
  if (host.startsWith("*.")) throw bad("wildcards are not allowed; name each service");
  if (METADATA_NAMES.has(host.replace(/\.$/, ""))) throw bad("a cloud metadata host can never be a private service");
  let pattern: HostPattern;
  try {
    pattern = compilePattern(host);
  } catch {
    throw bad("the host is not a DNS name, an IP address or a CIDR");
  }
  if (pattern.kind === "suffix") throw bad("wildcards are not allowed; name each service");
  return { pattern, port };
}

/** What a listed private service may resolve to besides public addresses: loopback and the private-use ranges. */
const PRIVATE_SERVICE_RANGES: readonly Cidr[] = [
  cidr("10.0.0.0/8"),
  cidr("172.16.0.0/12"),
  cidr("192.168.0.0/16"),
  cidr("100.64.0.0/10"),
  cidr("fc00::/7"),
];
const METADATA_ADDRESSES: readonly Cidr[] = [cidr("169.254.169.254/32"), cidr("fd00:ec2::254/128")];

/**
 * The verdict for an address of a LISTED private service: loopback and private-use addresses are allowed as well
 * as public ones; metadata, link-local, multicast, reserved and every other special range stay refused.
 */
export function classifyPrivateService(ip: IP): Verdict {
  if (METADATA_ADDRESSES.some((range) => matches(ip, range))) return { ok: false, reason: "a cloud metadata address" };
  if (PRIVATE_SERVICE_RANGES.some((range) => matches(ip, range))) return { ok: true, loopback: false };
  return classify(ip, true);
}
