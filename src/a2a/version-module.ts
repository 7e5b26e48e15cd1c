import type { DescService, JsonValue } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import type { Logger } from "../observability/logger.js";
import type { CallContext } from "../auth/call-context.js";
import { mapStream } from "../domain/live-stream.js";
import { oncePerObject } from "../domain/once-per-object.js";
import type { ErrorCode } from "../domain/errors.js";
import type { TaskService } from "./task-service.js";
import type { AgentCard } from "./agent-card.js";
import type { A2AVersion } from "../domain/a2a-version.js";
import type { PushBody } from "./push-status-facts.js";
import type { PeerVersionClient } from "../peer/peer-version.js";

/**
 * What every A2A version folder (`src/a2a/v03/`, `src/a2a/v10/`...) exports, and what the bindings read
 * through the registry (`versions.ts`). Nothing here knows node:http: HTTP+JSON routes are data (method,
 * path, decode, operation, encode) that the transport's generic router runs.
 */
export interface A2AVersionModule {
  version: A2AVersion;
  /**
   * A version (a draft) whose wire shapes are another's: the same JSON-RPC method names, gRPC service and
   * HTTP+JSON paths. Shapes then cannot pick it; the bindings do, by the `A2A-Version` the call names
   * (`versions.ts` `versionAsked`).
   */
  sharesShapesWith?: A2AVersion;
  /** The version's operations over the version-neutral service, bound once per app. */
  bind(deps: VersionDeps): VersionBindings;
  /** JSON-RPC method names this version answers (the endpoint routes a call by its method name). */
  jsonRpcMethodNames: readonly string[];
  /** The gRPC/Connect service (the path `/{typeName}/` routes a call to this version). */
  connectService: DescService;
  /** Media type of HTTP+JSON responses and errors. */
  restMediaType: string;
  errors: VersionErrorShapes;
  push: PushBody;
  card: VersionCardFields;
  /** The client half: how the `a2a.invoke` node calls a peer over this version (peer/peer-version.ts). */
  peer: PeerVersionClient;
}

export interface VersionDeps {
  service: TaskService;
  /** Whether tasks are durable (1.0 `returnImmediately` needs it). */
  durableTasks: boolean;
  /** Reports what a binding could not encode (and skipped). */
  logger: Logger;
}

export interface VersionBindings {
  jsonRpc: Record<string, JsonRpcMethod>;
  rest: RestRoute[];
  /** Registers the version's Connect service (gRPC, Connect, gRPC-Web) on the adapter's router. */
  connect(router: ConnectRouter): void;
}

/** A stream's events may be live (`domain/live-stream.ts`): the endpoint then writes each frame synchronously. */
export type JsonRpcResult = { kind: "unary"; result: unknown } | { kind: "stream"; events: AsyncIterable<unknown> };
export type JsonRpcMethod = (params: unknown, ctx: CallContext) => Promise<JsonRpcResult> | JsonRpcResult;

/** An HTTP+JSON request as a version's routes see it. */
export interface RestRequest {
  method: string;
  /** Path placeholders (`{id}`, `{tenant}`...). */
  params: Record<string, string | undefined>;
  query: URLSearchParams;
  /** Lower-case media type without parameters ("" when absent), and the raw header for messages. */
  mediaType: string;
  contentType: string;
  /** The whole body, refused over the size limit. */
  body(): Promise<Buffer>;
  /** A body as JSON: strict UTF-8 (parse-error), then nesting bounded by MAX_INPUT_DEPTH (invalid-params). */
  parseJson(raw: Buffer): unknown;
}

/** One HTTP+JSON route: decode the request, run the operation, encode the result (each event of a stream). */
export interface RestRoute {
  methods: readonly string[];
  /** `{name}` placeholders match one segment (`/v1/tasks/{id}:cancel`). */
  path: string;
  /** For logs. */
  name: string;
  kind: "unary" | "stream";
  /** Success status (200 unless said). */
  status?: number;
  /** A unary route's result; a stream route's events (live when its operation's are), once the request is decoded. */
  run(req: RestRequest, ctx: CallContext): Promise<unknown>;
}

/** Declares a route with its parts typed, and erases the types for the registry. */
export function restRoute<I, O>(route: {
  methods: string | readonly string[];
  path: string;
  name: string;
  status?: number;
  decode(req: RestRequest): Promise<I> | I;
  operation(input: I, ctx: CallContext): Promise<O>;
  encode(output: O): unknown;
}): RestRoute {
  return {
    ...placeOf(route),
    kind: "unary",
    ...(route.status ? { status: route.status } : {}),
    run: async (req, ctx) => route.encode(await route.operation(await route.decode(req), ctx)),
  };
}

export function restStreamRoute<I, O>(route: {
  methods: string | readonly string[];
  path: string;
  name: string;
  decode(req: RestRequest): Promise<I> | I;
  operation(input: I, ctx: CallContext): AsyncIterable<O>;
  encode(event: O): unknown;
}): RestRoute {
  // The streams of one task share their update objects (task-service `updatesOf`): each is encoded once.
  const encodeOnce = oncePerObject((event: O) => route.encode(event));
  return {
    ...placeOf(route),
    kind: "stream",
    run: async (req, ctx) => mapStream(route.operation(await route.decode(req), ctx), encodeOnce),
  };
}

function placeOf(route: {
  methods: string | readonly string[];
  path: string;
  name: string;
}): Pick<RestRoute, "methods" | "path" | "name"> {
  return { methods: [route.methods].flat(), path: route.path, name: route.name };
}

/**
 * A domain error with its row of the one wire table already looked up (by the transport, which owns the
 * table), for the version to spell. Internal causes are not here: they never reach a caller.
 */
export interface WireError {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  jsonRpc: number;
  http: number;
  /** gRPC status name (`NOT_FOUND`...). */
  grpc: string;
  /** `google.rpc.ErrorInfo.reason`. */
  reason: string;
  /** When the caller may retry (a limit's refusal): `google.rpc.RetryInfo.retry_delay`, `Retry-After`. */
  retryAfterSeconds?: number;
}

export interface JsonRpcErrorBody {
  jsonrpc: "2.0";
  id: string | number | null;
  error: { code: number; message: string; data?: unknown };
}

/** A status detail for gRPC / Connect (`grpc-status-details-bin`, Connect `details`). */
export interface ConnectDetail {
  type: string;
  value: Uint8Array;
  debug?: JsonValue;
}

/** A gRPC / Connect status name, as the wire table spells it. */
export type GrpcStatusName =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "FAILED_PRECONDITION"
  | "UNIMPLEMENTED"
  | "INTERNAL"
  | "UNAUTHENTICATED"
  | "PERMISSION_DENIED"
  | "ALREADY_EXISTS"
  | "ABORTED"
  | "RESOURCE_EXHAUSTED"
  | "UNAVAILABLE"
  | "DEADLINE_EXCEEDED";

/**
 * A version's column of the one wire table (transport/error-codes.ts): its HTTP and gRPC statuses where they
 * differ from the table's shared row. Every registered version has one, so the table has a column per version.
 */
export type VersionStatusColumn = Partial<Record<ErrorCode, { http?: number; grpc?: GrpcStatusName }>>;

export interface VersionErrorShapes {
  /** The version's status column (empty: the shared row as it is). */
  statuses: VersionStatusColumn;
  jsonRpc(id: string | number | null, err: WireError): JsonRpcErrorBody;
  httpJson(err: WireError): unknown;
  connectDetails(err: WireError): ConnectDetail[];
  /** A JSON-RPC stream failing before its first event: a plain JSON-RPC error, or one SSE `error` event. */
  jsonRpcStreamFailure: "plain" | "sse-event";
}

export interface VersionCardFields {
  /** The discovery profile name (`a2a-1.0`, `a2a-0.3-legacy`). */
  profile: string;
  /** The agent card as this version's clients read it at `/.well-known/agent-card.json`. */
  document(card: AgentCard): unknown;
  /** The document carries an AgentCardSignature (`signatures`, JWS with `jku` = our JWKS), made once at start. */
  signed?: boolean;
}
