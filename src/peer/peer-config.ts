/**
 * Named peers: the remote A2A agents `a2a.invoke` nodes may call by name (`peer: billing`), from `A2A_PEERS`
 * (JSON) or `A2A_PEERS_FILE` (YAML or JSON). `startHost({ peers })` is the same object.
 *
 *   { "billing": { "cardUrl": "https://billing.example/.well-known/agent-card.json",
 *                  "binding": "grpc", "protocolVersion": "1.0",          (both optional: pins)
 *                  "credentials": { "bearer": "…" },                      (or { "apiKey": "…", "header"?: "X-API-Key" },
 *                                                                          or { "oauth2": { "tokenUrl", "clientId", "clientSecret",
 *                                                                                           "scopes"?, "audience"? } };
 *                                                                          with or without "mtls": { "certFile", "keyFile", "caFile"? })
 *                  "signingKey": "…" },                                   (or "jwksUrl": "https://…": its pushes are signed)
 *     "signed":  { "cardUrl": "…", "cardSignature": "required", "jwksUrl": "https://…" },   (or pinned "jwks": {"keys": […]})
 *     "keyed":   { "cardUrl": "…", "jwksUrl": "https://…", "pushAuth": "static-bearer" },  (its pushes are not JWTs: peer-push-auth.ts)
 *     "legacy":  { "url": "https://legacy.example/a2a", "protocolVersion": "0.3", "binding": "jsonrpc" } }
 *
 * A peer without a card names its endpoint (`url`), version and binding itself. An API key goes in the header
 * the peer's card names in its apiKey security scheme, unless `credentials.header` says otherwise (required for
 * a peer without a card). Credentials are SecretValues from here on: they never print, and only the peer's
 * NAME is ever recorded in a task.
 */
import { X509Certificate, createPrivateKey } from "node:crypto";
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { SecretValue } from "../secrets/secret-value.js";
import { PEER_BINDINGS, PEER_VERSIONS, peerVersionOf, type PeerBinding, type PeerVersion } from "./peer-endpoint.js";
import type { PeerClientTls } from "./peer-http-client.js";
import { PEER_PUSH_AUTHS, type PeerPushAuth } from "./peer-push-auth.js";

export type PeerCredentialSettings =
  | { kind: "bearer"; token: SecretValue<string> }
  | { kind: "apiKey"; key: SecretValue<string>; header?: string }
  | {
      kind: "oauth2";
      tokenUrl: string;
      clientId: string;
      clientSecret: SecretValue<string>;
      scopes?: string[];
      audience?: string;
    };

export interface PeerConfig {
  name: string;
  /** The peer's agent card: the interface is chosen from it when the node first calls. */
  cardUrl?: string;
  /** A peer without a card: its endpoint, with `binding` and `protocolVersion` (both required then). */
  url?: string;
  binding?: PeerBinding;
  protocolVersion?: PeerVersion;
  credentials?: PeerCredentialSettings;
  /** The client certificate its connections present (`credentials.mtls`, read from the PEM files at start). */
  tls?: PeerClientTls;
  /**
   * The key the peer signs its pushes with (`X-OpenWOP-Signature`, HMAC-SHA256 as our own push worker signs: the
   * peer's PUSH_SIGNING_KEY). When set, a push to our callback without a valid signature is refused (401); a valid
   * one is taken as the peer's word (peer-push-trust.ts).
   */
  signingKey?: SecretValue<string>;
  /**
   * The peer's JWKS: its pushes carry `Authorization: Bearer <JWT>` signed with one of these keys (A2A's push
   * signing; unless `pushAuth` is "static-bearer"). As with `signingKey`, a push without a valid one is refused, a
   * valid one is trusted.
   */
  jwksUrl?: string;
  /**
   * `required`: the peer's agent card must carry an A2A AgentCardSignature that verifies with the peer's keys
   * (`jwks` pinned here, else `jwksUrl`; never the card's own `jku`), or the call is refused (peer-card-signature.ts).
   */
  cardSignature?: "required";
  /** The peer's public keys, pinned (a JWKS, public JWKs only): they verify its card and its pushes instead of `jwksUrl`. */
  jwks?: { keys: Array<Record<string, unknown>> };
  /**
   * How the peer authenticates its pushes (peer-push-auth.ts): "jwt" (the default for a peer with keys: it signs
   * each push with its JWKS) or "static-bearer" (it can only send the token it is given: its pushes are hints).
   */
  pushAuth?: PeerPushAuth;
}

/** What `startHost({ peers })` takes (and A2A_PEERS holds as JSON): name → peer. */
export interface PeerConfigInput {
  cardUrl?: string;
  url?: string;
  binding?: PeerBinding;
  protocolVersion?: string;
  credentials?: (
    | { bearer: string }
    | { apiKey: string; header?: string }
    | { oauth2: { tokenUrl: string; clientId: string; clientSecret: string; scopes?: string[]; audience?: string } }
    | Record<never, never>
  ) & {
    mtls?: { certFile: string; keyFile: string; caFile?: string };
  };
  signingKey?: string;
  jwksUrl?: string;
  cardSignature?: "required";
  jwks?: { keys: Array<Record<string, unknown>> };
  pushAuth?: PeerPushAuth;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const HEADER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
/** Headers a credential may not be put in: the wire's own. */
const RESERVED_HEADERS = new Set([
  "host",
  "content-type",
  "content-length",
  "a2a-version",
  "accept",
  "user-agent",
  "traceparent",
  "connection",
  "te",
  "transfer-encoding",
]);
const FIELDS = new Set([
  "cardUrl",
  "url",
  "binding",
  "protocolVersion",
  "credentials",
  "signingKey",
  "jwksUrl",
  "cardSignature",
  "jwks",
  "pushAuth",
]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function httpUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && !url.username && !url.password;
  } catch {
    return false;
  }
}

/**
 * Checks a peers object, reporting every problem to `problem` (`source` names where it came from). Problems
 * name the peer and the field, never a credential's value.
 */
export function parsePeers(
  value: unknown,
  source: string,
  problem: (message: string) => void,
): Map<string, PeerConfig> {
  const peers = new Map<string, PeerConfig>();
  if (!isObject(value)) {
    problem(
      `${source} must be an object mapping peer names to {cardUrl | url, binding?, protocolVersion?, credentials?}`,
    );
    return peers;
  }
  for (const [name, raw] of Object.entries(value)) {
    const where = `${source}: peer "${name.slice(0, 64)}"`;
    let clean = true;
    const report = (m: string) => {
      clean = false;
      problem(`${where}: ${m}`);
    };
    if (!NAME.test(name))
      report("a peer name is letters, digits, '.', '_' and '-' (at most 63, starting with a letter or digit)");
    if (!isObject(raw)) {
      report("must be an object");
      continue;
    }
    for (const key of Object.keys(raw))
      if (!FIELDS.has(key)) report(`unknown field "${key}" (known: ${[...FIELDS].join(", ")})`);
    const { cardUrl, url, binding, protocolVersion, credentials } = raw;
    if ((cardUrl === undefined) === (url === undefined))
      report('needs exactly one of "cardUrl" (its agent card) or "url" (a peer without a card)');
    if (cardUrl !== undefined && !httpUrl(cardUrl)) report("cardUrl must be an absolute http(s) URL without userinfo");
    if (
      url !== undefined &&
      !httpUrl(url) &&
      !(binding === "grpc" && typeof url === "string" && /^[^/?#@\s]+:\d+$/.test(url))
    ) {
      report("url must be an absolute http(s) URL without userinfo (for gRPC also host:port)");
    }
    if (binding !== undefined && !PEER_BINDINGS.includes(binding as PeerBinding))
      report(`binding must be one of ${PEER_BINDINGS.join(", ")}`);
    const version = protocolVersion === undefined ? undefined : peerVersionOf(protocolVersion);
    if (protocolVersion !== undefined && version === undefined)
      report(`protocolVersion must be ${PEER_VERSIONS.map((v) => JSON.stringify(v)).join(" or ")}`);
    if (url !== undefined && (binding === undefined || protocolVersion === undefined))
      report('a peer given by "url" (no card) needs "binding" and "protocolVersion" too');
    // mTLS is the connection's, and may come with any of the header credentials (or alone).
    const { mtls, ...headerCredentials } = isObject(credentials) ? credentials : {};
    const tls = isObject(credentials) && "mtls" in credentials ? parseMtls(mtls, name, report) : undefined;
    const onlyMtls = isObject(credentials) && "mtls" in credentials && Object.keys(headerCredentials).length === 0;
    const creds = onlyMtls
      ? undefined
      : parseCredentials(isObject(credentials) ? headerCredentials : credentials, report, url !== undefined);
    const signingKey = raw["signingKey"];
    if (
      signingKey !== undefined &&
      (typeof signingKey !== "string" || signingKey.length < 16 || /[\r\n]/.test(signingKey))
    )
      report("signingKey must be a single-line string of at least 16 characters (the peer's push signing key)");
    const jwksUrl = raw["jwksUrl"];
    if (jwksUrl !== undefined && !httpUrl(jwksUrl))
      report("jwksUrl must be an absolute http(s) URL without userinfo (the peer's JWKS, for its signed pushes)");
    const cardSignature = raw["cardSignature"];
    if (cardSignature !== undefined && cardSignature !== "required")
      report('cardSignature must be "required" (or left out)');
    const jwks = raw["jwks"];
    const jwksKeys = isObject(jwks) && Array.isArray(jwks["keys"]) ? jwks["keys"] : undefined;
    if (
      jwks !== undefined &&
      (!jwksKeys ||
        jwksKeys.length === 0 ||
        !jwksKeys.every(
          (k) => isObject(k) && typeof k["kty"] === "string" && k["kty"] !== "oct" && k["d"] === undefined,
        ))
    ) {
      report('jwks must be {"keys": [...]} with the peer\'s public JWKs (no private or HMAC keys)');
    }
    if (cardSignature === "required" && url !== undefined)
      report('cardSignature needs a card ("cardUrl"); a peer given by "url" has none');
    if (cardSignature === "required" && jwksUrl === undefined && jwks === undefined)
      report('cardSignature "required" needs the peer\'s keys: "jwksUrl" or pinned "jwks"');
    const pushAuth = raw["pushAuth"];
    if (pushAuth !== undefined && !PEER_PUSH_AUTHS.includes(pushAuth as PeerPushAuth))
      report(
        `pushAuth must be ${PEER_PUSH_AUTHS.map((a) => JSON.stringify(a)).join(" or ")} (or left out: "jwt" for a peer with keys)`,
      );
    if (pushAuth === "jwt" && jwksUrl === undefined && jwks === undefined)
      report('pushAuth "jwt" needs the peer\'s keys to verify its pushes: "jwksUrl" or pinned "jwks"');
    if (!clean) continue;
    peers.set(name, {
      name,
      ...(typeof cardUrl === "string" ? { cardUrl } : {}),
      ...(typeof url === "string" ? { url } : {}),
      ...(binding !== undefined ? { binding: binding as PeerBinding } : {}),
      ...(version !== undefined ? { protocolVersion: version } : {}),
      ...(creds ? { credentials: creds } : {}),
      ...(tls ? { tls } : {}),
      ...(typeof signingKey === "string" ? { signingKey: new SecretValue(signingKey) } : {}),
      ...(typeof jwksUrl === "string" ? { jwksUrl } : {}),
      ...(cardSignature === "required" ? { cardSignature } : {}),
      ...(jwksKeys ? { jwks: { keys: jwksKeys as Array<Record<string, unknown>> } } : {}),
      ...(pushAuth !== undefined ? { pushAuth: pushAuth as PeerPushAuth } : {}),
    });
  }
  return peers;
}

function parseCredentials(
  raw: unknown,
  report: (m: string) => void,
  noCard: boolean,
): PeerCredentialSettings | undefined {
  if (raw === undefined) return undefined;
  const shape =
    'credentials must be {"bearer": "<token>"}, {"apiKey": "<key>", "header"?: "<header name>"} or {"oauth2": {"tokenUrl", "clientId", "clientSecret", "scopes"?, "audience"?}}';
  if (!isObject(raw)) {
    report(shape);
    return undefined;
  }
  const keys = Object.keys(raw);
  if (keys.length === 1 && keys[0] === "bearer") {
    if (typeof raw["bearer"] !== "string" || !raw["bearer"] || /[\r\n]/.test(raw["bearer"])) {
      report("credentials.bearer must be a non-empty single-line string");
      return undefined;
    }
    return { kind: "bearer", token: new SecretValue(raw["bearer"]) };
  }
  if (keys.length === 1 && keys[0] === "oauth2") return parseOAuth2(raw["oauth2"], report);
  if (keys.includes("apiKey") && keys.every((k) => k === "apiKey" || k === "header")) {
    const header = raw["header"];
    if (typeof raw["apiKey"] !== "string" || !raw["apiKey"] || /[\r\n]/.test(raw["apiKey"])) {
      report("credentials.apiKey must be a non-empty single-line string");
      return undefined;
    }
    if (
      header !== undefined &&
      (typeof header !== "string" || !HEADER.test(header) || RESERVED_HEADERS.has(header.toLowerCase()))
    ) {
      report("credentials.header must be an HTTP header name (not one the wire sets itself)");
      return undefined;
    }
    if (header === undefined && noCard) {
      report("credentials.header is required for an API key to a peer without a card (the card would name the header)");
      return undefined;
    }
    return { kind: "apiKey", key: new SecretValue(raw["apiKey"]), ...(typeof header === "string" ? { header } : {}) };
  }
  report(shape);
  return undefined;
}

const OAUTH2_FIELDS = new Set(["tokenUrl", "clientId", "clientSecret", "scopes", "audience"]);
/** RFC 6749 §3.3: a scope token is printable ASCII without space, '"' or '\\'. */
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
const singleLine = (v: unknown): v is string => typeof v === "string" && v.length > 0 && !/[\r\n]/.test(v);

/** OAuth2 client credentials (RFC 6749 §4.4): the token endpoint, the client, and what to ask for. */
function parseOAuth2(raw: unknown, report: (m: string) => void): PeerCredentialSettings | undefined {
  if (!isObject(raw)) {
    report('credentials.oauth2 must be {"tokenUrl", "clientId", "clientSecret", "scopes"?, "audience"?}');
    return undefined;
  }
  let clean = true;
  const bad = (m: string) => {
    clean = false;
    report(`credentials.oauth2: ${m}`);
  };
  for (const key of Object.keys(raw))
    if (!OAUTH2_FIELDS.has(key)) bad(`unknown field "${key}" (known: ${[...OAUTH2_FIELDS].join(", ")})`);
  const { tokenUrl, clientId, clientSecret, scopes, audience } = raw;
  if (!httpUrl(tokenUrl)) bad("tokenUrl must be an absolute http(s) URL without userinfo");
  if (!singleLine(clientId)) bad("clientId must be a non-empty single-line string");
  if (!singleLine(clientSecret)) bad("clientSecret must be a non-empty single-line string");
  if (scopes !== undefined && !(Array.isArray(scopes) && scopes.every((s) => typeof s === "string" && SCOPE.test(s))))
    bad("scopes must be a list of scope names (no spaces or quotes)");
  if (audience !== undefined && !singleLine(audience)) bad("audience must be a non-empty single-line string");
  if (!clean) return undefined;
  return {
    kind: "oauth2",
    tokenUrl: tokenUrl as string,
    clientId: clientId as string,
    clientSecret: new SecretValue(clientSecret as string),
    ...(Array.isArray(scopes) ? { scopes: scopes as string[] } : {}),
    ...(typeof audience === "string" ? { audience } : {}),
  };
}

const MTLS_FIELDS = new Set(["certFile", "keyFile", "caFile"]);

/**
 * `credentials.mtls`: the client certificate and key (and the CAs to trust for the peer's certificate, instead of
 * the default ones), PEM files read now so a missing or mismatched file stops the start. Problems name the file
 * and the reason, never its content.
 */
function parseMtls(raw: unknown, peer: string, report: (m: string) => void): PeerClientTls | undefined {
  if (!isObject(raw)) {
    report('credentials.mtls must be {"certFile", "keyFile", "caFile"?} (PEM files)');
    return undefined;
  }
  let clean = true;
  const bad = (m: string) => {
    clean = false;
    report(`credentials.mtls: ${m}`);
  };
  for (const key of Object.keys(raw))
    if (!MTLS_FIELDS.has(key)) bad(`unknown field "${key}" (known: ${[...MTLS_FIELDS].join(", ")})`);
  const read = (field: string, required: boolean, marker: RegExp, what: string): string | undefined => {
    const file = raw[field];
    if (file === undefined && !required) return undefined;
    if (typeof file !== "string" || !file) return void bad(`${field} must be the path of a PEM file (${what})`);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      return void bad(`${field} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`);
    }
    if (!marker.test(text)) return void bad(`${field} ${file} is not PEM (${what})`);
    return text;
  };
  const cert = read("certFile", true, /-----BEGIN CERTIFICATE-----/, "the client certificate");
  const key = read("keyFile", true, /-----BEGIN [A-Z ]*PRIVATE KEY-----/, "the client certificate's private key");
  const ca = read("caFile", false, /-----BEGIN CERTIFICATE-----/, "the CA certificates to trust for the peer");
  if (cert !== undefined && key !== undefined) {
    try {
      if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key)))
        bad("keyFile is not the private key of certFile's certificate");
    } catch {
      bad("certFile or keyFile cannot be read as a certificate and its private key");
    }
  }
  if (!clean || cert === undefined || key === undefined) return undefined;
  return { id: peer, cert, key: new SecretValue(key), ...(ca !== undefined ? { ca } : {}) };
}

/** A2A_PEERS (JSON) or A2A_PEERS_FILE (YAML or JSON): the named peers, every problem reported to `problem`. */
export function readPeersConfig(
  json: string | undefined,
  file: string | undefined,
  problem: (message: string) => void,
): Map<string, PeerConfig> {
  if (json !== undefined && file !== undefined) {
    problem("set A2A_PEERS or A2A_PEERS_FILE, not both");
    return new Map();
  }
  if (json !== undefined) {
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      problem(
        "A2A_PEERS must be JSON: an object mapping peer names to {cardUrl | url, binding?, protocolVersion?, credentials?}",
      );
      return new Map();
    }
    return parsePeers(value, "A2A_PEERS", problem);
  }
  if (file !== undefined) {
    let value: unknown;
    try {
      value = parseYaml(readFileSync(file, "utf8"));
    } catch (err) {
      // The message names the file and the reason, never its content (it holds credentials).
      const reason = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.name : "unreadable");
      problem(`A2A_PEERS_FILE ${file} cannot be read as YAML or JSON (${reason})`);
      return new Map();
    }
    return parsePeers(value, `A2A_PEERS_FILE ${file}`, problem);
  }
  return new Map();
}
