/**
 * Which wire an `a2a.invoke` node speaks to a peer, and how that choice is recorded.
 *
 * A peer endpoint is a binding (JSON-RPC, gRPC or HTTP+JSON), an A2A protocol version (1.0 or 0.3) and a URL.
 * It is recorded (in node progress) as one string, `<binding>+<version>+<url>`: `jsonrpc+1.0+https://p/a2a`,
 * `grpc+1.0+https://p:443`, `http+json+0.3+https://p`. A 1.0 interface's `tenant` rides in the URL's fragment
 * (`#tenant=acme`: never sent, never shown). Endpoints recorded before versions were named read as 0.3: a bare
 * `https://…` is JSON-RPC 0.3 and `grpc+https://…` gRPC 0.3, so a task recorded by an older host keeps working.
 *
 * Choosing from a card (`choosePeerInterface`): every interface the card offers is collected — the 1.0
 * `supportedInterfaces` (binding and version per entry) and the 0.3 `url`/`preferredTransport` plus
 * `additionalInterfaces` — in the card's own order of preference. A pinned binding or version keeps only the
 * interfaces that match it; then 1.0 wins when it is offered, and 0.3 is used only when nothing newer is; the
 * first remaining interface (the card's preference) is taken. A pin the peer does not offer is an error naming
 * what it does offer: there is no silent downgrade.
 */
import { A2A_VERSIONS_NEWEST_FIRST, UNNAMED_A2A_VERSION, type A2AVersion } from "../domain/a2a-version.js";
import { PeerCallError } from "./peer-http-client.js";

export type PeerBinding = "jsonrpc" | "grpc" | "http+json";
/** The versions a peer is called over are the served ones (each version module has its client half). */
export type PeerVersion = A2AVersion;

export const PEER_BINDINGS: readonly PeerBinding[] = ["jsonrpc", "grpc", "http+json"];
/** Newest first: the order of preference. */
export const PEER_VERSIONS: readonly PeerVersion[] = A2A_VERSIONS_NEWEST_FIRST;

export interface PeerEndpoint {
  binding: PeerBinding;
  version: PeerVersion;
  /** JSON-RPC: the URL to POST to. gRPC: the https:// (or h2c http://) origin. HTTP+JSON: the base URL the paths go under. */
  url: string;
  /** A 1.0 interface's tenant, sent in every request. */
  tenant?: string;
}

const WIRE_NAMES: Record<string, PeerBinding> = { JSONRPC: "jsonrpc", GRPC: "grpc", "HTTP+JSON": "http+json" };
const CARD_NAMES: Record<PeerBinding, string> = { jsonrpc: "JSONRPC", grpc: "GRPC", "http+json": "HTTP+JSON" };

/** The binding a card names (`JSONRPC`, `GRPC`, `HTTP+JSON`, any case), if we speak it. */
export function bindingOfCardName(name: unknown): PeerBinding | undefined {
  return typeof name === "string" ? WIRE_NAMES[name.toUpperCase()] : undefined;
}

/** `1.0`, `1.0.0`, `0.3`, `0.3.0` → our version; anything else (versions we do not speak, garbage) → undefined. */
export function peerVersionOf(version: unknown): PeerVersion | undefined {
  if (typeof version !== "string") return undefined;
  const match = /^(\d+)\.(\d+)(\.\d+)?$/.exec(version.trim());
  if (!match) return undefined;
  const majorMinor = `${Number(match[1])}.${Number(match[2])}`;
  return PEER_VERSIONS.find((v) => v === majorMinor);
}

export function formatPeerEndpoint(endpoint: PeerEndpoint): string {
  const url = new URL(endpoint.url);
  url.hash = endpoint.tenant ? `tenant=${encodeURIComponent(endpoint.tenant)}` : "";
  return `${endpoint.binding}+${endpoint.version}+${url.href}`;
}

function invalidEndpoint(): PeerCallError {
  return new PeerCallError("the recorded peer endpoint is not one this host understands", "protocol", false);
}

/** A recorded endpoint, including those recorded before versions were named (read as 0.3). */
export function parsePeerEndpoint(recorded: string): PeerEndpoint {
  let binding: PeerBinding;
  let rest: string;
  if (recorded.startsWith("http+json+")) [binding, rest] = ["http+json", recorded.slice("http+json+".length)];
  else if (recorded.startsWith("jsonrpc+")) [binding, rest] = ["jsonrpc", recorded.slice("jsonrpc+".length)];
  else if (recorded.startsWith("grpc+")) [binding, rest] = ["grpc", recorded.slice("grpc+".length)];
  else [binding, rest] = ["jsonrpc", recorded]; // the 0.3-era JSON-RPC endpoint: the bare URL
  let version: PeerVersion = UNNAMED_A2A_VERSION; // `grpc+https://…` (0.3 era) names no version
  const versioned = /^(\d+\.\d+)\+/.exec(rest);
  if (versioned) {
    const named = peerVersionOf(versioned[1]);
    if (!named) throw invalidEndpoint();
    version = named;
    rest = rest.slice(versioned[0].length);
  }
  let url: URL;
  try {
    url = new URL(rest);
  } catch {
    throw invalidEndpoint();
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw invalidEndpoint();
  const tenant = /^#tenant=(.*)$/.exec(url.hash)?.[1];
  url.hash = "";
  return { binding, version, url: url.href, ...(tenant ? { tenant: decodeURIComponent(tenant) } : {}) };
}

/** A recorded endpoint as shown in logs and messages: binding, version and origin + path (no query, no tenant). */
export function shownEndpoint(recorded: string): string {
  try {
    const e = parsePeerEndpoint(recorded);
    const url = new URL(e.url);
    return `${e.binding}+${e.version}+${url.origin}${url.pathname}`;
  } catch {
    return "(not an endpoint)";
  }
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function invalidCard(what: string): PeerCallError {
  return new PeerCallError(`the remote agent sent an invalid agent card (${what})`, "protocol", false);
}

/** One interface a card offers, in our terms. */
export interface OfferedInterface {
  binding: PeerBinding | undefined;
  /** The card's own spelling, for messages. */
  bindingName: string;
  version: PeerVersion | undefined;
  versionName: string;
  url: unknown;
  tenant?: string;
}

/** What a card says in one version's shape (PeerVersionClient.card). Both read untrusted JSON and skip what does not fit. */
export interface PeerCardReader {
  /** The interfaces the card's fields of this version's shape offer, in the card's order of preference. */
  interfaces(card: Readonly<Record<string, unknown>>): OfferedInterface[];
  /** The API-key security schemes in this version's shape: where the key goes and under which name. */
  apiKeySchemes(card: Readonly<Record<string, unknown>>): Array<{ location: unknown; name: unknown }>;
}

/** The versions' card readers, newest first (the peer client's `versions`). */
type CardReaders = ReadonlyArray<{ card: PeerCardReader }>;

/**
 * Every interface a card offers, in its order of preference: each version's card fields in `versions` order (newest
 * first: 1.0 `supportedInterfaces`, then the 0.3 `url`/`preferredTransport`/`additionalInterfaces`). Each version's
 * client half reads its own shape (PeerVersionClient.card).
 */
export function offeredInterfaces(card: Json, versions: CardReaders): OfferedInterface[] {
  return versions.flatMap((v) => v.card.interfaces(card));
}

/** No interface of the card is one we may call: the version negotiation's refusal, with the version we asked for. */
export class PeerVersionRefused extends PeerCallError {
  constructor(
    message: string,
    readonly requested: PeerVersion,
  ) {
    super(message, "unsupported", false);
  }
}

export interface InterfacePin {
  binding?: PeerBinding;
  protocolVersion?: PeerVersion;
}

/** The interface to call (see the top of this file); `cardUrl` resolves relative URLs and gives bare gRPC targets their scheme. */
export function choosePeerInterface(
  card: unknown,
  cardUrl: string,
  versions: CardReaders,
  pin: InterfacePin = {},
): PeerEndpoint {
  if (!isObject(card)) throw invalidCard("not an object");
  const offered = offeredInterfaces(card, versions);
  const usable = offered.filter(
    (i) => i.binding !== undefined && i.version !== undefined && typeof i.url === "string" && i.url !== "",
  );
  const pinned = usable.filter(
    (i) =>
      (pin.binding === undefined || i.binding === pin.binding) &&
      (pin.protocolVersion === undefined || i.version === pin.protocolVersion),
  );
  const version = PEER_VERSIONS.find((v) => pinned.some((i) => i.version === v));
  const chosen = pinned.find((i) => i.version === version);
  if (!chosen) {
    const list = [...new Set(offered.map((i) => `${i.bindingName} ${i.versionName}`))].join(", ") || "none";
    const wanted = [
      pin.binding ? `binding ${CARD_NAMES[pin.binding]}` : "",
      pin.protocolVersion ? `A2A ${pin.protocolVersion}` : "",
    ]
      .filter(Boolean)
      .join(" over ");
    const why = wanted
      ? `the remote agent does not offer ${wanted}, which this peer is pinned to`
      : `the remote agent offers no A2A ${PEER_VERSIONS.join(" or ")} interface over JSON-RPC, gRPC or HTTP+JSON`;
    throw new PeerVersionRefused(`${why} (its card offers: ${list})`, pin.protocolVersion ?? PEER_VERSIONS[0]!);
  }
  return endpointOf(chosen.binding!, chosen.version!, chosen.url as string, cardUrl, chosen.tenant);
}

/** A configured or offered interface as an endpoint: URLs checked, gRPC targets normalised to their origin. */
export function endpointOf(
  binding: PeerBinding,
  version: PeerVersion,
  url: string,
  base: string,
  tenant?: string,
): PeerEndpoint {
  // Tenants came with 1.0: the version an unnamed one means (0.3) has none, so its interfaces' tenant is dropped.
  const withTenant = version !== UNNAMED_A2A_VERSION && tenant ? { tenant } : {};
  if (binding === "grpc") return { binding, version, url: grpcOriginOf(url, base), ...withTenant };
  let parsed: URL;
  try {
    parsed = new URL(url, base);
  } catch {
    throw invalidCard(`its ${CARD_NAMES[binding]} url is not a URL`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:")
    throw invalidCard(`its ${CARD_NAMES[binding]} url is not an http(s) URL`);
  if (parsed.username || parsed.password) throw invalidCard(`its ${CARD_NAMES[binding]} url carries credentials`);
  parsed.hash = "";
  return { binding, version, url: parsed.href, ...withTenant };
}

/**
 * A card's gRPC target as an origin. A gRPC url is usually a bare `host:port` (no scheme), sometimes a URL:
 * `https://` and `grpcs://` mean TLS, `http://` and `grpc://` plaintext h2c (then refused by the egress guard
 * unless the test-only loopback allowance is on and the target is loopback). A bare target takes the card's own
 * scheme: TLS when the card came over https, which is always the case outside the test allowance. A path is
 * ignored (gRPC routes by service and method).
 */
export function grpcOriginOf(target: string, cardUrl: string): string {
  const raw = target.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw);
  const bad = () => invalidCard("its gRPC url is neither host:port nor an http(s) or grpc(s) URL");
  let url: URL;
  try {
    if (scheme) {
      const name = scheme[1]!.toLowerCase();
      const tls = name === "https" || name === "grpcs";
      if (!tls && name !== "http" && name !== "grpc") throw new Error("scheme");
      url = new URL(`${tls ? "https" : "http"}://${raw.slice(scheme[0].length)}`);
    } else {
      if (raw === "" || /[/?#@\s\\]/.test(raw)) throw new Error("not host:port");
      url = new URL(`${new URL(cardUrl).protocol === "http:" ? "http" : "https"}://${raw}`);
    }
  } catch {
    throw bad();
  }
  if (!url.hostname || url.username || url.password) throw bad();
  return url.origin;
}

/**
 * The header an API key goes in, from the card's apiKey security scheme, in any version's shape (the 0.3 JSON
 * `{type: "apiKey", in: "header", name}`, the 1.0 ProtoJSON `{apiKeySecurityScheme: {location, name}}`).
 * Only `header` locations are used (a key in a query string or cookie would end up in logs and caches).
 */
export function apiKeyHeaderOf(card: unknown, versions: CardReaders): string {
  const apiKeys = isObject(card) ? versions.flatMap((v) => v.card.apiKeySchemes(card)) : [];
  const header = apiKeys.find(
    (k) =>
      String(k.location).toLowerCase() === "header" &&
      typeof k.name === "string" &&
      /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(k.name),
  );
  if (header) return header.name as string;
  if (apiKeys.length > 0) {
    throw new PeerCallError(
      "the remote agent's apiKey security scheme does not take the key in a header (only header API keys are sent); set credentials.header to send it anyway",
      "unsupported",
      false,
    );
  }
  throw new PeerCallError(
    "the remote agent's card declares no apiKey security scheme, so the header for the API key is unknown; set credentials.header, or use bearer credentials",
    "unsupported",
    false,
  );
}
