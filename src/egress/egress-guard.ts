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
import {
  classify,
  compilePattern,
  DNS_NAME,
  formatIp,
  isLoopbackName,
  matchesUnmapped,
  METADATA_NAMES,
  parseAddress,
  patternMatchesHost,
  PRIVATE_SUFFIXES,
  type HostPattern,
  type IP,
} from "./egress-addresses.js";

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
export type EgressSubject = "push" | "peer" | "http node";

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
    refuse("url", `the URL carries userinfo (user:password@); put credentials in the ${subject} authentication instead`);
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
