import type { AgentInterface } from "../a2a/agent-card.js";

/** Where the JSON-RPC binding listens (both A2A versions: the method names tell them apart). */
export const JSONRPC_PATH = "/a2a/jsonrpc";

/** `http://host[:port]` → `host:port`, the target form gRPC clients (grpc-js, a2a-js) expect. */
export function grpcTarget(publicUrl: string): string {
  const url = new URL(publicUrl);
  return `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
}

/**
 * The interfaces this host serves at `publicUrl`, as the agent card lists them: JSON-RPC first (preferred),
 * gRPC as a "host:port" target (not a URL), HTTP+JSON at the root (its routes are under /v1).
 */
export function hostInterfaces(publicUrl: string): AgentInterface[] {
  return [
    { url: `${publicUrl}${JSONRPC_PATH}`, transport: "JSONRPC" },
    { url: grpcTarget(publicUrl), transport: "GRPC" },
    { url: publicUrl, transport: "HTTP+JSON" },
  ];
}
