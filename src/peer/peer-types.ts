import type { Artifact, Message } from "../domain/a2a-types.js";

/** A peer's task as read off the wire (A2A v0.3 JSON or a2a.v1 proto, checked by the client). `state` is the raw wire value. */
export interface PeerTask {
  id: string;
  contextId: string;
  state: string;
  statusMessage?: Message;
  statusTimestamp?: string;
  artifacts: Artifact[];
  history: Message[];
}

/** What `message/send` answered: a task, or (for a peer that answers at once) a plain message. */
export type PeerReply = { kind: "task"; task: PeerTask } | { kind: "message"; message: Message };

export type PeerTransportName = "JSONRPC" | "GRPC";

export interface PeerEndpoint {
  /** JSON-RPC: the URL to POST to. gRPC: `grpc+https://host:port` (or `grpc+http://` for h2c). */
  endpoint: string;
  transport: PeerTransportName;
  name?: string;
}

/** One wire to peers (JSON-RPC or gRPC): the calls an a2a.invoke node makes once it knows the endpoint. */
export interface PeerTransport {
  send(endpoint: string, message: Message, signal?: AbortSignal): Promise<PeerReply>;
  getTask(endpoint: string, taskId: string, signal?: AbortSignal): Promise<PeerTask>;
  cancelTask(endpoint: string, taskId: string, signal?: AbortSignal): Promise<PeerTask>;
  close(): Promise<void>;
}
