import type { Artifact, Message } from "../domain/a2a-types.js";
import type { PeerClientTls } from "./peer-http-client.js";

/**
 * A peer's task as read off the wire (A2A 0.3 JSON, a2a.v1 or lf.a2a.v1 proto or ProtoJSON, checked by the
 * client). `state` is the 0.3 JSON spelling (`input-required`, `canceled`, …) whatever the wire; a state the
 * client does not know reads as "unknown". This is the one shape the projection reads: a poll, a push or a
 * stream event that carries a whole task all come down to it.
 */
export interface PeerTask {
  id: string;
  contextId: string;
  state: string;
  statusMessage?: Message;
  statusTimestamp?: string;
  artifacts: Artifact[];
  history: Message[];
}

/** What SendMessage answered: a task, or (for a peer that answers at once) a plain message. */
export type PeerReply = { kind: "task"; task: PeerTask } | { kind: "message"; message: Message };

/** Per call: the caller's abort signal and the peer's credentials as request headers (never logged). */
export interface PeerCallOptions {
  signal?: AbortSignal;
  headers?: Readonly<Record<string, string>>;
  /** The named peer's client certificate (mTLS): the connection presents it. */
  tls?: PeerClientTls;
}

/**
 * A push config registered inline with a send: the peer POSTs its task's changes to `url` (our callback receiver)
 * with `token` (per visit; never stored). Sent as `configuration.taskPushNotificationConfig` (1.0) or
 * `configuration.pushNotificationConfig` / `push_notification` (0.3), always with Bearer `authentication`:
 * with `credentials` (the token again, for a peer that can only send static credentials) or without, which asks
 * the peer to sign a Bearer JWT with its own keys (A2A's push flow; peer-push-auth.ts decides which).
 */
export interface PeerPushRequest {
  url: string;
  token: string;
  credentials?: string;
}

/** A send's options: the call options, plus the push config to register inline (when the peer's card offers push). */
export interface PeerSendOptions extends PeerCallOptions {
  push?: PeerPushRequest;
}

/**
 * One event of a task stream (1.0 `SubscribeToTask`, 0.3 `tasks/resubscribe`): a whole task, or a status or
 * artifact update to fold into the last one (peer-stream.ts).
 */
export type PeerStreamEvent =
  | { kind: "task"; task: PeerTask }
  | { kind: "status"; taskId: string; state: string; statusMessage?: Message; statusTimestamp?: string }
  | { kind: "artifact"; taskId: string; artifact: Artifact; append: boolean };

/**
 * One wire to peers (JSON-RPC, gRPC or HTTP+JSON, each in 0.3 and 1.0): the calls an a2a.invoke node makes once
 * it knows the endpoint. `endpoint` is the recorded form (peer-endpoint.ts), which names binding and version.
 */
export interface PeerTransport {
  send(endpoint: string, message: Message, options?: PeerSendOptions): Promise<PeerReply>;
  getTask(endpoint: string, taskId: string, options?: PeerCallOptions): Promise<PeerTask>;
  cancelTask(endpoint: string, taskId: string, options?: PeerCallOptions): Promise<PeerTask>;
  /** The task's stream (1.0 SubscribeToTask / 0.3 tasks/resubscribe), where the wire has one here; ends when the peer closes it. */
  subscribe?(endpoint: string, taskId: string, options?: PeerCallOptions): AsyncIterable<PeerStreamEvent>;
  close(): Promise<void>;
}

/** A task stream silent this long is taken for broken and re-attached (our own hosts send a keepalive every 15 s). */
export const DEFAULT_STREAM_IDLE_MS = 60_000;
