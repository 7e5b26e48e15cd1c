import type { A2AVersion } from "./a2a-version.js";

/**
 * The OpenWOP invoke seam (`POST /v1/host/sample/a2a/invoke`, RFC 0148 §A / 0152 §B, §E), as the transport sees
 * it: what the suite asks for and what our a2a.invoke client did on the wire. The node kind that calls peers
 * implements it (its folder under engine/nodes/) and offers it through the registry's `seams`; app.ts hands it to
 * the route. Types only, so the route and the kind share them without importing each other.
 */
export interface PeerInvokeRequest {
  /** The peer's base URL (its card is at `/.well-known/agent-card.json`) or its card's URL. */
  peerUrl: string;
  /** Call the peer over this version only; one we do not speak fails at once. */
  requestVersion?: string;
  /** Take the peer to offer this version only; the card must offer it, else the call fails. */
  peerOffersOnly?: string;
  /** Sent to the peer as the message text `scenario:<name>` (scripted peers pick their answer from it). */
  scenario?: string;
}

export interface PeerInvokeReport {
  /** The version every call to the peer was made over (its `A2A-Version`). */
  negotiatedVersion: A2AVersion;
  /** The version this host prefers; `negotiatedVersion` differs when the peer (or the request) settled on another. */
  preferredVersion: A2AVersion;
  peerTaskId?: string;
  /** The peer task's last state we read (A2A 0.3 spelling). */
  peerState?: string;
  /** What the node made of the peer's answer: completed, input-required, failed, canceled, or still waiting. */
  outcome: "completed" | "input-required" | "failed" | "canceled" | "waiting";
  /** Every task id the client asked the peer about after its send (GetTask, CancelTask). */
  taskReads: string[];
}

/** The seam's engine half. */
export interface PeerInvokeSeam {
  /** Refuses (interop-version-unsupported) a request pinning a version we do not speak, before anything runs. */
  check(request: PeerInvokeRequest): void;
  /** Runs the client against the peer in the context of our run `taskId` (tenant `tenant`), and reports. */
  invoke(request: PeerInvokeRequest, run: { taskId: string; tenant: string }): Promise<PeerInvokeReport>;
}
