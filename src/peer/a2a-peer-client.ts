/**
 * The A2A client of the `a2a.invoke` node: agent card discovery, then SendMessage, GetTask and CancelTask over
 * the wire the card (or the named peer's configuration) chose — JSON-RPC, gRPC or HTTP+JSON, each in A2A 1.0 or
 * 0.3 (peer-endpoint.ts says how the interface is chosen and how the choice is recorded). Everything a peer
 * answers is untrusted input: each wire's codec checks it and reduces it to our PeerTask.
 *
 * Named peers (peer-config.ts) carry credentials: each call looks up the peer's credentials provider by the
 * peer's name (peer-credentials.ts) and sends what it gives: `Authorization: Bearer …` (static or an OAuth2
 * token) or the API key header the card named. Nothing but the name (and that header's
 * name) is ever recorded, so a restarted node finds them again in the configuration.
 */
import type { Message } from "../domain/a2a-types.js";
import {
  choosePeerInterface,
  endpointOf,
  apiKeyHeaderOf,
  formatPeerEndpoint,
  parsePeerEndpoint,
  PEER_VERSIONS,
  type PeerEndpoint,
  type PeerVersion,
} from "./peer-endpoint.js";
import { parsePeerJson } from "./peer-json.js";
import { PeerCardSignatures } from "./peer-card-signature.js";
import { PEER_JWKS_TIMEOUT_MS, PeerJwks } from "./peer-jwks.js";
import { egressFetch } from "../egress/egress-fetch.js";
import type { PeerConfig } from "./peer-config.js";
import { Code } from "@connectrpc/connect";
import { createOAuth2PeerCredentials } from "./oauth2-peer-credentials.js";
import type { PeerCredentials } from "./peer-credentials.js";
import { createStaticPeerCredentials } from "./static-peer-credentials.js";
import { PeerCallError, type PeerClientTls, type PeerHttpClient } from "./peer-http-client.js";
import type { PeerPushRequest, PeerReply, PeerStreamEvent, PeerTask, PeerTransport } from "./peer-types.js";
import { createJsonRpcPeerTransport, createRestPeerTransport } from "./http-peer-transports.js";
import { peerVersionIn, type PeerVersions } from "./peer-version.js";
import { injectTraceHeaders } from "../observability/spans.js";
import { traceContextOf, withTraceContext } from "../domain/trace-context.js";

export type { PeerCallOptions, PeerTransport } from "./peer-types.js";

/** What the node calls: a named peer (configured), or the agent card URL of an unnamed one (no credentials). */
export interface PeerRef {
  peer?: string;
  agentCardUrl: string;
  /** An unnamed peer called over this version only (a named peer's pin is in its configuration): no silent downgrade. */
  protocolVersion?: PeerVersion;
}

/** Everything a call needs, as recorded in node progress: the endpoint, the peer's name, the API key's header name. */
export interface PeerTarget {
  endpoint: string;
  peer?: string;
  apiKeyHeader?: string;
}

/** What the peer's card offers besides request/response (`capabilities.pushNotifications`, `capabilities.streaming`). */
export interface PeerCapabilities {
  push: boolean;
  streaming: boolean;
}

/** Discovery plus the calls, each routed to the wire its endpoint names, with the named peer's credentials. */
export interface A2APeerClient {
  /**
   * The target and, from the card, what it offers (a peer without a card offers neither push nor streaming), and
   * the version negotiated: the one asked for (the pin, else our newest) and the one the target speaks. No version
   * in common is a PeerVersionRefused (peer-endpoint.ts).
   */
  discover(
    ref: PeerRef,
    signal?: AbortSignal,
  ): Promise<PeerTarget & { capabilities?: PeerCapabilities; negotiation?: { requested: string; negotiated: string } }>;
  send(target: PeerTarget, message: Message, signal?: AbortSignal, push?: PeerPushRequest): Promise<PeerReply>;
  /** The peer task's stream on the recorded wire; undefined when that wire has none here (then push or polling). */
  subscribe?(target: PeerTarget, taskId: string, signal: AbortSignal): AsyncIterable<PeerStreamEvent> | undefined;
  /** Whether `subscribe` has a stream on the target's wire (the version says over which bindings: 1.0 all, 0.3 JSON-RPC). */
  canStream?(target: PeerTarget): boolean;
  getTask(target: PeerTarget, taskId: string, signal?: AbortSignal): Promise<PeerTask>;
  cancelTask(target: PeerTarget, taskId: string, signal?: AbortSignal): Promise<PeerTask>;
  close(): Promise<void>;
}

/**
 * With tracing on, the active span's trace context replaces the run's in `metadata.openwop` (the engine always puts
 * one there: engine/nodes/a2a-invoke/peer-trace.ts), so the message names the trace the wire's header continues.
 */
function withActiveTrace(message: Message): Message {
  const carrier = injectTraceHeaders({});
  const active = traceContextOf(carrier["traceparent"], carrier["tracestate"]);
  return active ? withTraceContext(message, active) : message;
}

/** The version asked for (the pin, else the newest we speak) and the one the chosen interface speaks. */
function negotiationOf(
  pin: Pick<PeerConfig, "protocolVersion">,
  chosen: PeerEndpoint,
): { requested: string; negotiated: string } {
  return { requested: pin.protocolVersion ?? PEER_VERSIONS[0]!, negotiated: chosen.version };
}

/** The interface a named peer's pins and card settle on (peer-endpoint.ts). */
export function peerEndpointOf(
  card: unknown,
  cardUrl: string,
  versions: PeerVersions,
  pin: Pick<PeerConfig, "binding" | "protocolVersion"> = {},
): PeerEndpoint {
  return choosePeerInterface(card, cardUrl, versions, {
    ...(pin.binding ? { binding: pin.binding } : {}),
    ...(pin.protocolVersion ? { protocolVersion: pin.protocolVersion } : {}),
  });
}

/** `capabilities.pushNotifications` and `capabilities.streaming` of a card (0.3 and 1.0 spell them alike); absent is false. */
export function capabilitiesOf(card: unknown): PeerCapabilities {
  const caps =
    typeof card === "object" && card !== null ? (card as Record<string, unknown>)["capabilities"] : undefined;
  const read = (name: string) =>
    typeof caps === "object" && caps !== null && (caps as Record<string, unknown>)[name] === true;
  return { push: read("pushNotifications"), streaming: read("streaming") };
}

export function createA2APeerClient(opts: {
  http: PeerHttpClient;
  grpc: PeerTransport;
  /** The client half of each version, newest first (the registry's `peerVersions()`). */
  versions: PeerVersions;
  requestTimeoutMs: number;
  /** A held task stream silent this long is dropped and re-attached (A2A_PEER_STREAM_IDLE_MS). */
  streamIdleMs?: number;
  peers?: ReadonlyMap<string, PeerConfig>;
  /** The peers' key sets (card signatures); by default fetched through `http`. */
  jwks?: PeerJwks;
}): A2APeerClient {
  const { http, grpc, versions } = opts;
  const peers = opts.peers ?? new Map<string, PeerConfig>();
  const jsonRpc = createJsonRpcPeerTransport({
    http,
    requestTimeoutMs: opts.requestTimeoutMs,
    versions,
    ...(opts.streamIdleMs !== undefined ? { streamIdleMs: opts.streamIdleMs } : {}),
  });
  const rest = createRestPeerTransport({
    http,
    requestTimeoutMs: opts.requestTimeoutMs,
    versions,
    ...(opts.streamIdleMs !== undefined ? { streamIdleMs: opts.streamIdleMs } : {}),
  });
  const over = (endpoint: string): PeerTransport => {
    const binding = parsePeerEndpoint(endpoint).binding;
    return binding === "grpc" ? grpc : binding === "http+json" ? rest : jsonRpc;
  };

  function canStream(target: PeerTarget): boolean {
    const { binding, version } = parsePeerEndpoint(target.endpoint);
    return peerVersionIn(versions, version).streams.has(binding);
  }

  function configOf(name: string): PeerConfig {
    const peer = peers.get(name);
    if (!peer) {
      const known = [...peers.keys()].join(", ") || "none";
      throw new PeerCallError(
        `no peer named "${name}" is configured (A2A_PEERS; configured: ${known})`,
        "unsupported",
        false,
      );
    }
    return peer;
  }

  /** Each named peer's credentials provider, made on first use (a fetched OAuth2 token lives in it). */
  const providers = new Map<string, PeerCredentials | undefined>();
  function credentialsOf(target: PeerTarget): PeerCredentials | undefined {
    if (target.peer === undefined) return undefined;
    if (!providers.has(target.peer)) {
      const { name, credentials } = configOf(target.peer);
      const provider = !credentials
        ? undefined
        : credentials.kind === "oauth2"
          ? createOAuth2PeerCredentials({ peer: name, settings: credentials, http, timeoutMs: opts.requestTimeoutMs })
          : createStaticPeerCredentials(name, credentials);
      providers.set(target.peer, provider);
    }
    return providers.get(target.peer);
  }

  /** The client certificate of the target's peer (mTLS), as call options; none for an unnamed peer. */
  function tlsOf(target: PeerTarget): { tls?: PeerClientTls } {
    const tls = target.peer === undefined ? undefined : configOf(target.peer).tls;
    return tls ? { tls } : {};
  }

  /** The credentials of the target's peer as headers; none for an unnamed peer. */
  async function headersOf(target: PeerTarget): Promise<Record<string, string>> {
    const credentials = credentialsOf(target);
    return credentials
      ? credentials.headersFor(target.apiKeyHeader !== undefined ? { apiKeyHeader: target.apiKeyHeader } : {})
      : {};
  }

  /**
   * What a peer's error may not carry back to us: a peer that quotes the request in its error text (an echoed
   * header, our callback token) would otherwise put our secrets into the node's failure, which callers read.
   */
  function secretsOf(target: PeerTarget, push?: PeerPushRequest): string[] {
    const own = target.peer === undefined ? [] : (providers.get(target.peer)?.secrets() ?? []);
    return push ? [...own, push.token] : own;
  }

  /**
   * One call with the peer's credentials. A 401 / UNAUTHENTICATED to credentials that can be fetched again (an
   * OAuth2 token the peer no longer takes) is answered by fetching them once and making the call once more.
   */
  async function authorized<T>(
    target: PeerTarget,
    call: (headers: Record<string, string>) => Promise<T>,
    push?: PeerPushRequest,
  ): Promise<T> {
    try {
      const headers = await headersOf(target);
      try {
        return await call(headers);
      } catch (err) {
        if (!isUnauthenticated(err) || !credentialsOf(target)?.onUnauthorized()) throw err;
        return await call(await headersOf(target));
      }
    } catch (err) {
      throw withoutSecrets(err, secretsOf(target, push));
    }
  }

  async function* authorizedStream(
    target: PeerTarget,
    transport: PeerTransport,
    taskId: string,
    signal: AbortSignal,
  ): AsyncIterable<PeerStreamEvent> {
    try {
      yield* transport.subscribe!(target.endpoint, taskId, {
        headers: await headersOf(target),
        ...tlsOf(target),
        signal,
      });
    } catch (err) {
      // Not made again here: the runner reads the task instead, with credentials fetched afresh.
      if (isUnauthenticated(err)) credentialsOf(target)?.onUnauthorized();
      throw withoutSecrets(err, secretsOf(target));
    }
  }

  const cardSignatures = new PeerCardSignatures(opts.jwks ?? new PeerJwks(egressFetch(http, PEER_JWKS_TIMEOUT_MS)));

  async function readCard(cardUrl: string, signal: AbortSignal | undefined, tls?: PeerClientTls): Promise<unknown> {
    const response = await http.request({
      method: "GET",
      url: cardUrl,
      timeoutMs: opts.requestTimeoutMs,
      ...(signal ? { signal } : {}),
      ...(tls ? { tls } : {}),
    });
    return parsePeerJson(response.body, "agent card");
  }

  return {
    async discover(ref, signal) {
      if (ref.peer === undefined) {
        const card = await readCard(ref.agentCardUrl, signal);
        const pin = ref.protocolVersion !== undefined ? { protocolVersion: ref.protocolVersion } : {};
        const chosen = peerEndpointOf(card, ref.agentCardUrl, versions, pin);
        return {
          endpoint: formatPeerEndpoint(chosen),
          capabilities: capabilitiesOf(card),
          negotiation: negotiationOf(pin, chosen),
        };
      }
      const peer = configOf(ref.peer);
      if (peer.url !== undefined) {
        // A peer without a card: its configuration names the wire (both binding and version are required then).
        const endpoint = endpointOf(
          peer.binding!,
          peer.protocolVersion!,
          peer.url,
          peer.url.includes("://") ? peer.url : "https://invalid/",
        );
        return { endpoint: formatPeerEndpoint(endpoint), peer: peer.name, negotiation: negotiationOf(peer, endpoint) };
      }
      const cardUrl = peer.cardUrl!;
      const card = await readCard(cardUrl, signal, peer.tls);
      // cardSignature: required: a card that does not verify with the peer's keys is not used at all.
      await cardSignatures.check(peer, card);
      const chosen = peerEndpointOf(card, cardUrl, versions, peer);
      const endpoint = formatPeerEndpoint(chosen);
      const apiKeyHeader =
        peer.credentials?.kind === "apiKey" ? (peer.credentials.header ?? apiKeyHeaderOf(card, versions)) : undefined;
      return {
        endpoint,
        peer: peer.name,
        ...(apiKeyHeader ? { apiKeyHeader } : {}),
        capabilities: capabilitiesOf(card),
        negotiation: negotiationOf(peer, chosen),
      };
    },
    send: (target, message, signal, push) =>
      authorized(
        target,
        (headers) =>
          over(target.endpoint).send(target.endpoint, withActiveTrace(message), {
            headers,
            ...tlsOf(target),
            ...(signal ? { signal } : {}),
            ...(push ? { push } : {}),
          }),
        push,
      ),
    canStream,
    subscribe(target, taskId, signal) {
      const transport = over(target.endpoint);
      return canStream(target) && transport.subscribe ? authorizedStream(target, transport, taskId, signal) : undefined;
    },
    getTask: (target, taskId, signal) =>
      authorized(target, (headers) =>
        over(target.endpoint).getTask(target.endpoint, taskId, {
          headers,
          ...tlsOf(target),
          ...(signal ? { signal } : {}),
        }),
      ),
    cancelTask: (target, taskId, signal) =>
      authorized(target, (headers) =>
        over(target.endpoint).cancelTask(target.endpoint, taskId, {
          headers,
          ...tlsOf(target),
          ...(signal ? { signal } : {}),
        }),
      ),
    async close() {
      await Promise.all([jsonRpc.close(), grpc.close()]);
    },
  };
}

/** A 401 (HTTP) or UNAUTHENTICATED (gRPC) from the peer: its credentials were not taken (a 403 is an answer). */
function isUnauthenticated(err: unknown): boolean {
  return (
    err instanceof PeerCallError &&
    err.kind === "unauthorized" &&
    (err.httpStatus === 401 || err.rpcCode === Code.Unauthenticated)
  );
}

/** A PeerCallError whose text quotes one of `secrets` comes back with each of them replaced by "[redacted]". */
export function withoutSecrets(err: unknown, secrets: readonly string[]): unknown {
  if (!(err instanceof PeerCallError)) return err;
  const quoted = secrets.filter((secret) => secret.length > 0 && err.message.includes(secret));
  if (quoted.length === 0) return err;
  const message = quoted.reduce((text, secret) => text.split(secret).join("[redacted]"), err.message);
  return new PeerCallError(message, err.kind, err.retryable, err.rpcCode, err.httpStatus);
}
