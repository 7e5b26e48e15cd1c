/**
 * SSRF guard for every outbound URL: push-notification webhooks and calls to peer agents.
 *
 * For push it is applied twice: when a push config is registered (`checkEgressUrlSyntax`, then
 * `checkEgressUrl`) and again before EVERY delivery (`checkEgressUrl`, whose resolved addresses the
 * guarded client then pins the connection to — see pinned-pools.ts). Peer calls check every request. It follows OpenWOP
 * `webhooks.md` §"SSRF protection" / RFC 0093 §A and A2A v1.0 §13.2, and is stricter where those
 * are silent (ports, special-purpose ranges, embedded IPv4 in IPv6 transition prefixes).
 *
 * Arms, in the order they run:
 *   url     — the string must be a short, clean, absolute WHATWG URL without userinfo and with a host
 *   scheme  — https: only; http: only under the test-only `allowHttpLoopback` AND to a loopback target
 *   address — literal IPs, well-known internal names (synchronously), then every resolved address
 *   policy  — host-configured deny list (checked first) and allow list
 *   port    — the scheme's default port, `allowedPorts`, or any port on loopback under `allowHttpLoopback`
 * Name targets are resolved once per check; the address, policy (CIDR deny entries), scheme and port
 * arms that depend on the answer run again on the resolved addresses.
 *
 * Error messages name the host, scheme and port only, never the path or query (which may carry secrets).
 */
import { promises as dnsPromises } from "node:dns";
import ipaddr from "ipaddr.js";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;
type IP = IPv4 | IPv6;

export interface EgressPolicy {
  /** Test-only: allows http:// AND loopback addresses (127/8, ::1, localhost) — nothing else private. */
  allowHttpLoopback: boolean;
  /** Non-default ports allowed. The scheme's default port is always allowed; with allowHttpLoopback any port on loopback is. */
  allowedPorts: number[];
  /** Allow list: when non-empty the hostname must match one entry (exact, "*.example.com" subdomain pattern, IP literal or CIDR for literal-IP hosts). */
  allowHosts: string[];
  /** Deny list, same syntax, checked first. IP and CIDR entries are also matched against every resolved address. */
  denyHosts: string[];
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export type EgressArm = "scheme" | "address" | "url" | "policy" | "port";

/** What is being checked; refusals name it ("push URL refused by …", "peer URL host … could not be resolved"). */
export type EgressSubject = "push" | "peer";

export class EgressRefusedError extends Error {
  readonly arm: EgressArm;
  /** Plain-words reason without the "push URL refused by …" prefix. */
  readonly reason: string;

  constructor(arm: EgressArm, reason: string, subject: EgressSubject) {
    super(`${subject} URL refused by the ${arm} arm: ${reason}`);
    this.name = "EgressRefusedError";
    this.arm = arm;
    this.reason = reason;
  }
}

/**
 * The host name could not be resolved (NXDOMAIN, resolver failure, empty answer). Not a refusal:
 * at delivery time it is a transient failure; at registration the caller decides.
 */
export class EgressResolutionError extends Error {
  readonly code: string | undefined;

  constructor(host: string, code: string | undefined, subject: EgressSubject) {
    super(`${subject} URL host ${host} could not be resolved${code ? ` (${code})` : ""}`);
    this.name = "EgressResolutionError";
    this.code = code;
  }
}

export const MAX_EGRESS_URL_LENGTH = 2048;

/** Resolve with the OS resolver (getaddrinfo), every address, in the resolver's order. */
export const defaultResolver: Resolver = async (hostname) => {
  const answers = await dnsPromises.lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/** Cloud instance-metadata host names (exact match after lower-casing and dropping a trailing dot). */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata", // GCP short name, also used by other clouds' search domains
  "metadata.google.internal", // GCP
  "metadata.goog", // GCP
  "instance-data", // AWS (EC2 classic name)
  "instance-data.ec2.internal", // AWS
]);

/** Name suffixes that only ever resolve inside a private network. */
const PRIVATE_SUFFIXES: ReadonlyArray<readonly [suffix: string, why: string]> = [
  [".internal", "a private-use name (.internal)"],
  [".local", "a multicast-DNS name (.local)"],
  [".localdomain", "a local-only name (.localdomain)"],
  [".home.arpa", "a home-network name (.home.arpa)"],
];

function isLoopbackName(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost");
}

const DNS_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

type Cidr = [IP, number];

function cidr(text: string): Cidr {
  return ipaddr.parseCIDR(text);
}

/** IPv4 ranges refused, most specific first. Anything ipaddr does not call "unicast" is refused too. */
const V4_REFUSED: ReadonlyArray<readonly [Cidr, string]> = [
  [cidr("169.254.169.254/32"), "a cloud metadata address"],
  [cidr("0.0.0.0/8"), "an unspecified (\"this network\") address"],
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
const V6_GLOBAL_UNICAST = cidr("2000::/3");
const V6_MAPPED = cidr("::ffff:0:0/96");
const V6_TRANSLATED = cidr("::ffff:0:0:0/96");
const V6_COMPATIBLE = cidr("::/96");
const V6_NAT64 = cidr("64:ff9b::/96");
const V6_6TO4 = cidr("2002::/16");
const V6_TEREDO = cidr("2001::/32");

/** IPv6 ranges refused outright (the unwrap cases above are handled before these). */
const V6_REFUSED: ReadonlyArray<readonly [Cidr, string]> = [
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
    return { ok: false, reason: `an IPv4-compatible IPv6 address (deprecated; embeds ${v4FromParts(p[6] ?? 0, p[7] ?? 0).toString()})` };
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

function classify(ip: IP, allowLoopback: boolean): Verdict {
  return ip.kind() === "ipv4" ? classifyV4(ip as IPv4, allowLoopback) : classifyV6(ip as IPv6, allowLoopback);
}

/** Parse an address string as returned by a resolver (no brackets; a "%zone" suffix is kept and refused). */
function parseAddress(text: string): IP | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (ipaddr.IPv6.isValid(bare)) return ipaddr.IPv6.parse(bare);
  return undefined;
}

/** Canonical text: dotted quad for IPv4 and IPv4-mapped, RFC 5952 for IPv6. */
function formatIp(ip: IP): string {
  return ip.kind() === "ipv4" ? ip.toString() : (ip as IPv6).toRFC5952String();
}

// ---------------------------------------------------------------------------------------------
// Host patterns (allow/deny lists)
// ---------------------------------------------------------------------------------------------

type HostPattern =
  | { kind: "exact"; name: string }
  | { kind: "suffix"; suffix: string }
  | { kind: "cidr"; range: Cidr };

function normalizeName(text: string): string {
  let name = text.trim().toLowerCase();
  if (name.startsWith("[") && name.endsWith("]")) name = name.slice(1, -1);
  if (name.endsWith(".")) name = name.slice(0, -1);
  return name;
}

function compilePattern(entry: string): HostPattern {
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

function patternMatchesHost(pattern: HostPattern, name: string, literal: IP | undefined): boolean {
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
function matchesUnmapped(ip: IP, range: Cidr): boolean {
  if (matches(ip, range)) return true;
  if (ip.kind() === "ipv6" && (ip as IPv6).isIPv4MappedAddress()) return matches((ip as IPv6).toIPv4Address(), range);
  return false;
}

// ---------------------------------------------------------------------------------------------
// The synchronous part
// ---------------------------------------------------------------------------------------------

interface Analysis {
  url: URL;
  /** Lower-case host without brackets or trailing dot; what resolvers and patterns see. */
  name: string;
  /** "host" as shown in messages: the name, or the canonical IP. */
  display: string;
  scheme: "https" | "http";
  /** Explicit non-default port, or undefined for the scheme's default. */
  port: number | undefined;
  literal: IP | undefined;
  deny: HostPattern[];
  /** Checks that can only be decided once a name is resolved: every address must then be loopback. */
  needLoopback: Array<{ arm: EgressArm; reason: string }>;
}

type Refuse = (arm: EgressArm, reason: string) => never;

function refuser(subject: EgressSubject): Refuse {
  return (arm, reason) => {
    throw new EgressRefusedError(arm, reason, subject);
  };
}

function shown(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

// Whitespace (incl. Unicode spaces) and C0/C1 control characters. WHATWG URL silently strips some
// of these; a URL that needs stripping is refused rather than "repaired".
// eslint-disable-next-line no-control-regex
const BAD_CHARS = /[\u0000-\u0020\u007f-\u009f\s\u200b-\u200f\u2028\u2029\ufeff]/u;

function analyze(raw: unknown, policy: EgressPolicy, subject: EgressSubject): Analysis {
  const refuse: Refuse = refuser(subject);
  // --- url arm (shape) ---
  if (typeof raw !== "string" || raw === "") refuse("url", "the URL is empty or not a string");
  if (raw.length > MAX_EGRESS_URL_LENGTH) refuse("url", `the URL is longer than ${MAX_EGRESS_URL_LENGTH} characters`);
  if (BAD_CHARS.test(raw)) refuse("url", "the URL contains whitespace or control characters");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    refuse("url", "the URL is not a valid absolute URL");
  }
  if (url.href.length > MAX_EGRESS_URL_LENGTH) {
    refuse("url", `the normalized URL is longer than ${MAX_EGRESS_URL_LENGTH} characters`);
  }

  // --- scheme arm (which schemes exist at all) ---
  const protocol = url.protocol;
  if (protocol !== "https:" && protocol !== "http:") {
    refuse("scheme", `scheme ${shown(protocol.replace(/:$/, ""))} is not allowed; ${subject} URLs must use https`);
  }
  const scheme = protocol === "https:" ? "https" : "http";

  // --- url arm (authority) ---
  // Any "@" in the authority is refused, even an empty userinfo that the parser drops: parsers
  // disagree about userinfo, and it is the classic way to make a URL look like another host.
  const authority = raw.slice(raw.indexOf(":") + 1).replace(/^[/\\]*/, "").split(/[/\\?#]/, 1)[0] ?? "";
  if (url.username !== "" || url.password !== "" || authority.includes("@")) {
    refuse("url", "the URL carries userinfo (user:password@); put credentials in the ${subject} authentication instead");
  }
  if (url.hostname === "") refuse("url", "the URL has no host");

  let name = url.hostname.toLowerCase();
  const bracketed = name.startsWith("[") && name.endsWith("]");
  if (bracketed) name = name.slice(1, -1);
  else if (name.endsWith(".")) name = name.slice(0, -1);

  // --- literal IP (WHATWG has already normalized decimal/octal/hex/short IPv4 to dotted form; ipaddr
  // is asked again in case anything slipped through) ---
  let literal: IP | undefined;
  if (bracketed) {
    if (!ipaddr.IPv6.isValid(name)) refuse("url", "the bracketed host is not a valid IPv6 address");
    literal = ipaddr.IPv6.parse(name);
  } else if (ipaddr.IPv4.isValid(name)) {
    literal = ipaddr.IPv4.parse(name);
  } else if (name === "" || name.startsWith(".") || name.endsWith(".") || name.includes("..")) {
    refuse("url", "the host name has an empty label");
  } else if (name.length > 253 || name.split(".").some((label) => label.length > 63)) {
    refuse("url", "the host name is longer than DNS allows");
  } else if (!DNS_NAME.test(name)) {
    refuse("url", "the host name contains characters that are not valid in a DNS name");
  } else if (/^[0-9]+$/.test(name.slice(name.lastIndexOf(".") + 1))) {
    refuse("url", "the host name ends in a numeric label but is not an IPv4 address");
  }
  const display = literal ? formatIp(literal) : shown(name);
  const port = url.port === "" ? undefined : Number(url.port);
  const where = `${scheme}://${literal?.kind() === "ipv6" ? `[${display}]` : display}${port === undefined ? "" : `:${port}`}`;

  const literalVerdict = literal ? classify(literal, policy.allowHttpLoopback) : undefined;
  const literalLoopback = literalVerdict?.ok === true && literalVerdict.loopback;

  // --- scheme arm (http only to loopback under the test-only policy) ---
  const needLoopback: Analysis["needLoopback"] = [];
  if (scheme === "http") {
    if (!policy.allowHttpLoopback) {
      refuse("scheme", `http is not allowed for ${where}; ${subject} URLs must use https`);
    }
    const reason = `http is only allowed to loopback targets (${where} is not loopback)`;
    if (literal !== undefined) {
      if (!literalLoopback) refuse("scheme", reason);
    } else {
      needLoopback.push({ arm: "scheme", reason });
    }
  }

  // --- address arm (synchronous part: literal IPs and names) ---
  if (literalVerdict && !literalVerdict.ok) refuse("address", `${display} is ${literalVerdict.reason}`);
  if (literal === undefined) {
    if (METADATA_NAMES.has(name)) refuse("address", `${display} is a cloud metadata host`);
    if (isLoopbackName(name)) {
      if (!policy.allowHttpLoopback) refuse("address", `${display} is a loopback name`);
      needLoopback.push({ arm: "address", reason: `${display} is a loopback name but resolves to a non-loopback address` });
    } else {
      for (const [suffix, why] of PRIVATE_SUFFIXES) {
        if (name.endsWith(suffix)) refuse("address", `${display} is ${why}`);
      }
      if (!name.includes(".")) {
        refuse("address", `${display} is a single-label name (not fully qualified; it would resolve through local search domains)`);
      }
    }
  }

  // --- policy arm ---
  const deny = policy.denyHosts.map(compilePattern);
  if (deny.some((p) => patternMatchesHost(p, name, literal))) refuse("policy", `${display} is on the ${subject} deny list`);
  if (policy.allowHosts.length > 0) {
    const allow = policy.allowHosts.map(compilePattern);
    if (!allow.some((p) => patternMatchesHost(p, name, literal))) {
      refuse("policy", `${display} is not on the ${subject} allow list`);
    }
  }

  // --- port arm ---
  if (port !== undefined && !policy.allowedPorts.includes(port)) {
    const reason = `port ${port} is not allowed for ${where} (only the default port or configured ports)`;
    if (!policy.allowHttpLoopback) refuse("port", reason);
    if (literal !== undefined) {
      if (!literalLoopback) refuse("port", reason);
    } else {
      needLoopback.push({ arm: "port", reason });
    }
  }

  url.hash = "";
  return { url, name, display, scheme, port, literal, deny, needLoopback };
}

/**
 * The synchronous checks: url shape, scheme, literal IPs, internal names, allow/deny lists, ports.
 * Use it to validate a push URL BEFORE looking a task up, then call `checkEgressUrl` for the DNS part.
 * Returns the parsed URL without its fragment. Throws EgressRefusedError.
 */
export function checkEgressUrlSyntax(url: string, policy: EgressPolicy, subject: EgressSubject): URL {
  return analyze(url, policy, subject).url;
}

/**
 * Full check: the synchronous arms, then (for names) one resolution through `resolve` and the
 * address arm on EVERY answer. Returns the addresses a connection may use — connect only to these.
 * Throws EgressRefusedError, or EgressResolutionError when the name does not resolve.
 */
export async function checkEgressUrl(
  url: string,
  policy: EgressPolicy,
  subject: EgressSubject,
  resolve: Resolver = defaultResolver,
): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  const refuse: Refuse = refuser(subject);
  const a = analyze(url, policy, subject);
  if (a.literal !== undefined) {
    return { url: a.url, addresses: [{ address: formatIp(a.literal), family: a.literal.kind() === "ipv4" ? 4 : 6 }] };
  }

  let answers: ResolvedAddress[];
  try {
    answers = await resolve(a.name);
  } catch (err) {
    const code = typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : undefined;
    throw new EgressResolutionError(a.display, code, subject);
  }
  if (!Array.isArray(answers) || answers.length === 0) throw new EgressResolutionError(a.display, "NODATA", subject);

  const addresses: ResolvedAddress[] = [];
  const seen = new Set<string>();
  let allLoopback = true;
  for (const answer of answers) {
    const ip = typeof answer?.address === "string" ? parseAddress(answer.address) : undefined;
    if (ip === undefined) refuse("address", `${a.display} resolved to a malformed address`);
    const text = formatIp(ip);
    const verdict = classify(ip, policy.allowHttpLoopback);
    if (!verdict.ok) refuse("address", `${a.display} resolves to ${text}, ${verdict.reason}`);
    if (!verdict.loopback) allLoopback = false;
    if (a.deny.some((p) => p.kind === "cidr" && matchesUnmapped(ip, p.range))) {
      refuse("policy", `${a.display} resolves to ${text}, which is on the ${subject} deny list`);
    }
    if (!seen.has(text)) {
      seen.add(text);
      addresses.push({ address: text, family: ip.kind() === "ipv4" ? 4 : 6 });
    }
  }
  if (!allLoopback) {
    const first = a.needLoopback[0];
    if (first) refuse(first.arm, first.reason);
  }
  return { url: a.url, addresses };
}
