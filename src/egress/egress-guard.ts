/**
 * SSRF guard for every outbound URL: push-notification webhooks, calls to peer agents (and their cards, OAuth2
 * token endpoints and JWKS), `http` nodes' services and the OIDC issuer; egress-http-client.ts runs it on every
 * request, the gRPC peer client on every call.
 *
 * For push it is applied twice: when a push config is registered (`checkEgressUrlSyntax`, then
 * `checkEgressUrl`) and again before EVERY delivery (`checkEgressUrl`, whose resolved addresses the
 * egress client then pins the connection to — see pinned-pools.ts). Every other caller checks every request. It follows OpenWOP
 * `webhooks.md` §"SSRF protection" / RFC 0093 §A and A2A v1.0 §13.2, and is stricter where those
 * are silent (ports, special-purpose ranges, embedded IPv4 in IPv6 transition prefixes).
 *
 * Arms, in the order they run:
 *   url     — the string must be a short, clean, absolute WHATWG URL without userinfo and with a host
 *   scheme  — https: only; http: only to a listed private service (`privateHosts`), or under the test-only
 *             `allowHttpLoopback` to a loopback target
 *   address — literal IPs, well-known internal names (synchronously), then every resolved address; a listed
 *             private service may be loopback or private-use (never metadata, link-local or special-purpose)
 *   policy  — host-configured deny list (checked first) and allow list
 *   port    — the scheme's default port, `allowedPorts`, a listed private service's port, or any port on
 *             loopback under `allowHttpLoopback`
 * Name targets are resolved once per check; the address, policy (CIDR deny entries), scheme and port
 * arms that depend on the answer run again on the resolved addresses.
 *
 * Error messages name the host, scheme and port only, never the path or query (which may carry secrets), and,
 * when the policy names its settings, the setting that would allow the target.
 */
import { promises as dnsPromises } from "node:dns";
import ipaddr from "ipaddr.js";
import {
  classify,
  classifyPrivateService,
  compilePattern,
  compilePrivateService,
  DNS_NAME,
  formatIp,
  isLoopbackName,
  matchesUnmapped,
  METADATA_NAMES,
  parseAddress,
  patternMatchesHost,
  PRIVATE_SUFFIXES,
  type Cidr,
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
  /**
   * Private services the operator names (`host:port`, `cidr:port`; egress-addresses.ts `compilePrivateService`):
   * a target listed by name or IP on its port may be plain http, loopback or private-use; a name whose every
   * resolved address lies in a listed CIDR on that port likewise. Everything else private stays refused.
   */
  privateHosts?: string[];
  /** The settings behind this policy, named in refusals so an operator knows what would allow the target. */
  settings?: EgressSettingNames;
}

/** Environment variables that configure a policy (e.g. HTTP_NODE_ALLOWED_PORTS); absent ones are not offered. */
export interface EgressSettingNames {
  allowedPorts?: string;
  allowHosts?: string;
  denyHosts?: string;
  privateHosts?: string;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export type EgressArm = "scheme" | "address" | "url" | "policy" | "port";

/** What is being checked; refusals name it ("push URL refused by …", "peer URL host … could not be resolved"). */
export type EgressSubject = "push" | "peer" | "OIDC" | `${string} node`;

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
  /** The target is a listed private service (by name or IP, on its port): private addresses and http allowed. */
  listed: boolean;
  /** Listed private CIDRs on the target's port: a name whose every address lies in them passes `deferred`. */
  privateRanges: Cidr[];
  /**
   * Checks that can only be decided once a name is resolved: each passes when every address lies in
   * `privateRanges`, or (`loopbackOk`, under the test-only allowance) every address is loopback; the first that
   * does not pass refuses.
   */
  deferred: Array<{ arm: EgressArm; reason: string; loopbackOk: boolean }>;
  /** "; list it as host:port in HTTP_NODE_PRIVATE_HOSTS" when the policy has such a setting, else "". */
  privateHint: string;
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
  const authority =
    raw
      .slice(raw.indexOf(":") + 1)
      .replace(/^[/\\]*/, "")
      .split(/[/\\?#]/, 1)[0] ?? "";
  if (url.username !== "" || url.password !== "" || authority.includes("@")) {
    refuse(
      "url",
      `the URL carries userinfo (user:password@); put credentials in the ${subject} authentication instead`,
    );
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

  // --- private services the operator listed on this port (HTTP_NODE_PRIVATE_HOSTS) ---
  const settings = policy.settings ?? {};
  const privateHint = settings.privateHosts
    ? `; to reach a private service, list it as host:port in ${settings.privateHosts}`
    : "";
  const services = (policy.privateHosts ?? [])
    .map(compilePrivateService)
    .filter((s) => s.port === (port ?? (scheme === "https" ? 443 : 80)));
  const listed = services.some((s) => patternMatchesHost(s.pattern, name, literal));
  const privateRanges =
    literal === undefined ? services.flatMap((s) => (s.pattern.kind === "cidr" ? [s.pattern.range] : [])) : [];
  // A name not listed itself may still be a private service: decided on its addresses (checkEgressUrl).
  const mayDefer = privateRanges.length > 0;

  const literalVerdict = literal
    ? listed
      ? classifyPrivateService(literal)
      : classify(literal, policy.allowHttpLoopback)
    : undefined;
  const literalLoopback = literalVerdict?.ok === true && literalVerdict.loopback;

  // --- scheme arm (http only to listed private services, or to loopback under the test-only policy) ---
  const deferred: Analysis["deferred"] = [];
  if (scheme === "http" && !listed) {
    if (!policy.allowHttpLoopback && !mayDefer) {
      refuse("scheme", `http is not allowed for ${where}; ${subject} URLs must use https${privateHint}`);
    }
    const allowedTo = policy.allowHttpLoopback
      ? "loopback targets"
      : `the private services listed in ${settings.privateHosts ?? "the private host list"}`;
    const reason = `http is only allowed to ${allowedTo} (${where} is not one)${policy.allowHttpLoopback ? privateHint : ""}`;
    if (literal !== undefined) {
      if (!literalLoopback) refuse("scheme", reason);
    } else {
      deferred.push({ arm: "scheme", reason, loopbackOk: true });
    }
  }

  // --- address arm (synchronous part: literal IPs and names) ---
  if (literalVerdict && !literalVerdict.ok)
    refuse(
      "address",
      `${display} is ${literalVerdict.reason}${classifyPrivateService(literal!).ok ? privateHint : ""}`,
    );
  if (literal === undefined) {
    if (METADATA_NAMES.has(name)) refuse("address", `${display} is a cloud metadata host`);
    if (listed) {
      // Named by the operator with its port: private names (single-label, .internal, localhost) are what it is for.
    } else if (isLoopbackName(name)) {
      if (!policy.allowHttpLoopback && !mayDefer) refuse("address", `${display} is a loopback name${privateHint}`);
      deferred.push({
        arm: "address",
        reason: `${display} is a loopback name but resolves to a non-loopback address${privateHint}`,
        loopbackOk: true,
      });
    } else {
      const privateName =
        PRIVATE_SUFFIXES.find(([suffix]) => name.endsWith(suffix))?.[1] ??
        (name.includes(".")
          ? undefined
          : "a single-label name (not fully qualified; it would resolve through local search domains)");
      if (privateName !== undefined) {
        const reason = `${display} is ${privateName}${privateHint}`;
        if (!mayDefer) refuse("address", reason);
        // Only a listed CIDR can make a private name acceptable; the test-only loopback allowance never did.
        deferred.push({ arm: "address", reason, loopbackOk: false });
      }
    }
  }

  // --- policy arm ---
  const deny = policy.denyHosts.map(compilePattern);
  const denyHint = settings.denyHosts ? ` (${settings.denyHosts})` : "";
  if (deny.some((p) => patternMatchesHost(p, name, literal)))
    refuse("policy", `${display} is on the ${subject} deny list${denyHint}`);
  if (policy.allowHosts.length > 0 && !listed) {
    const allow = policy.allowHosts.map(compilePattern);
    if (!allow.some((p) => patternMatchesHost(p, name, literal))) {
      refuse(
        "policy",
        `${display} is not on the ${subject} allow list${settings.allowHosts ? ` (add it to ${settings.allowHosts})` : ""}${privateHint}`,
      );
    }
  }

  // --- port arm (a listed private service is allowed on the port its entry names) ---
  if (port !== undefined && !listed && !policy.allowedPorts.includes(port)) {
    const portHint = settings.allowedPorts ? `; add it to ${settings.allowedPorts}` : "";
    const reason = `port ${port} is not allowed for ${where} (only the default port or configured ports)${portHint}${privateHint}`;
    if (!policy.allowHttpLoopback && !mayDefer) refuse("port", reason);
    if (literal !== undefined) {
      if (!literalLoopback) refuse("port", reason);
    } else {
      deferred.push({ arm: "port", reason, loopbackOk: true });
    }
  }

  url.hash = "";
  return { url, name, display, scheme, port, literal, deny, listed, privateRanges, deferred, privateHint };
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
  let allInPrivateRanges = true;
  for (const answer of answers) {
    const ip = typeof answer?.address === "string" ? parseAddress(answer.address) : undefined;
    if (ip === undefined) refuse("address", `${a.display} resolved to a malformed address`);
    const text = formatIp(ip);
    const inRange = a.privateRanges.some((range) => ip.kind() === range[0].kind() && ip.match(range));
    const verdict = a.listed || inRange ? classifyPrivateService(ip) : classify(ip, policy.allowHttpLoopback);
    if (!verdict.ok)
      refuse(
        "address",
        `${a.display} resolves to ${text}, ${verdict.reason}${classifyPrivateService(ip).ok ? a.privateHint : ""}`,
      );
    if (!verdict.loopback || (inRange && !policy.allowHttpLoopback)) allLoopback = false;
    if (!inRange) allInPrivateRanges = false;
    if (a.deny.some((p) => p.kind === "cidr" && matchesUnmapped(ip, p.range))) {
      refuse(
        "policy",
        `${a.display} resolves to ${text}, which is on the ${subject} deny list${policy.settings?.denyHosts ? ` (${policy.settings.denyHosts})` : ""}`,
      );
    }
    if (!seen.has(text)) {
      seen.add(text);
      addresses.push({ address: text, family: ip.kind() === "ipv4" ? 4 : 6 });
    }
  }
  const failed = a.deferred.find((check) => !allInPrivateRanges && !(check.loopbackOk && allLoopback));
  if (failed) refuse(failed.arm, failed.reason);
  return { url: a.url, addresses };
}
