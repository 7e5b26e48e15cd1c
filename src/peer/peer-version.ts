/**
 * The client half of one A2A version: what the peer transports (JSON-RPC, HTTP+JSON, gRPC) need to call a peer
 * over that version. Each version folder implements it (`src/a2a/v03/v03-peer-client-codec.ts`,
 * `src/a2a/v10/v10-peer-client-codec.ts`) and exposes it as its version module's `peer`; core.ts hands the
 * registry's list (`peerVersions()`, newest first) to the peer client. The transports own the wire mechanics
 * (URLs, headers, SSE, deadlines, sessions, error statuses); a version owns what goes in a request and how an
 * answer reads, so peer/ never asks which version it speaks.
 *
 * Everything a peer answers is untrusted input: the decoders check it and reduce it to our PeerTask, throwing a
 * PeerCallError ("protocol") on what does not fit. A refused call is read by its binding, the same in every
 * version (HTTP status, JSON-RPC error code, gRPC status: http-peer-transports.ts, grpc-peer-client.ts), and
 * the error's text read from either version's body shape, so a version adds nothing there.
 */
import type { DescService } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import type { A2AVersion } from "../domain/a2a-version.js";
import type { Message } from "../domain/a2a-types.js";
import type { PeerBinding, PeerCardReader } from "./peer-endpoint.js";
import { PeerCallError } from "./peer-http-client.js";
import type { PeerPushRequest, PeerReply, PeerStreamEvent, PeerTask } from "./peer-types.js";

export interface PeerVersionClient {
  version: A2AVersion;
  /** The bindings over which this version holds a task stream here (others are pushed to or polled). */
  streams: ReadonlySet<PeerBinding>;
  jsonRpc: PeerJsonRpcCodec;
  rest: PeerRestCodec;
  grpc: PeerGrpcCodec;
  /** How this version's card shape offers interfaces and API-key schemes (a card may carry several versions' fields). */
  card: PeerCardReader;
  /** Whether a pushed body (parsed JSON) is in this version's shape; the first version that claims it decodes it. */
  claimsPush(json: unknown): boolean;
  /** A pushed body as a stream event; undefined for one that carries no task state (a message). */
  readPush(json: unknown): PeerStreamEvent | undefined;
}

/** JSON-RPC: the method names this version calls, its params, and how each `result` reads. */
export interface PeerJsonRpcCodec {
  methods: { send: string; get: string; cancel: string; subscribe: string };
  /** A non-blocking send, with our push config registered inline when `push` is given. */
  sendParams(message: Message, tenant: string | undefined, push: PeerPushRequest | undefined): unknown;
  getParams(taskId: string, tenant: string | undefined): unknown;
  cancelParams(taskId: string, tenant: string | undefined): unknown;
  subscribeParams(taskId: string, tenant: string | undefined): unknown;
  /** `what` names the answer in error messages (`SendMessage result`). */
  readReply(result: unknown, what: string): PeerReply;
  readTask(result: unknown, what: string): PeerTask;
  readStreamEvent(result: unknown, what: string): PeerStreamEvent | undefined;
}

/** HTTP+JSON: where the paths go, the body media type, the bodies and how answers read. */
export interface PeerRestCodec {
  /** Content type of request bodies. */
  mediaType: string;
  /** What goes between the endpoint's base URL and `/message:send`, `/tasks/{id}`... (`/v1`, `/{tenant}`). */
  prefix(tenant: string | undefined): string;
  sendBody(message: Message, tenant: string | undefined, push: PeerPushRequest | undefined): unknown;
  cancelBody(taskId: string, tenant: string | undefined): unknown;
  readReply(json: unknown, what: string): PeerReply;
  readTask(json: unknown, what: string): PeerTask;
  /** `POST …/tasks/{id}:subscribe`, where this version has it: the body, and how each SSE `data` reads. */
  subscribe?: {
    body(taskId: string, tenant: string | undefined): unknown;
    readEvent(json: unknown, what: string): PeerStreamEvent | undefined;
  };
}

/** Per call: deadline, abort signal and metadata. */
export interface PeerGrpcCallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  headers: Record<string, string>;
}

/** gRPC: the version's service descriptor, and a client for it over one connection. */
export interface PeerGrpcCodec {
  service: DescService;
  client(transport: Transport): PeerGrpcClient;
}

/** The calls over one connection; errors are the Connect client's own (the transport reads them). */
export interface PeerGrpcClient {
  send(
    message: Message,
    tenant: string | undefined,
    push: PeerPushRequest | undefined,
    options: PeerGrpcCallOptions,
  ): Promise<PeerReply>;
  getTask(taskId: string, tenant: string | undefined, options: PeerGrpcCallOptions): Promise<PeerTask>;
  cancelTask(taskId: string, tenant: string | undefined, options: PeerGrpcCallOptions): Promise<PeerTask>;
  /** The task's stream, where the version has one over gRPC; each response as an event (none for a message). */
  subscribe?(
    taskId: string,
    tenant: string | undefined,
    options: PeerGrpcCallOptions,
  ): AsyncIterable<PeerStreamEvent | undefined>;
}

/** The versions the peer client speaks, newest first (the registry's order of preference). */
export type PeerVersions = readonly PeerVersionClient[];

/** The client half of `version`; a recorded endpoint naming a version not in the list is refused earlier (peer-endpoint.ts). */
export function peerVersionIn(versions: PeerVersions, version: A2AVersion): PeerVersionClient {
  const found = versions.find((v) => v.version === version);
  if (!found) throw new PeerCallError(`this host does not call peers over A2A ${version}`, "unsupported", false);
  return found;
}
