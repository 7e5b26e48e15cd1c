import type { Socket } from "node:net";
import type { PeerCertificate, TLSSocket } from "node:tls";

/**
 * The client certificate of a TLS connection, only when the handshake verified it against TLS_CLIENT_CA_FILE
 * (`authorized`: chain and validity dates). With TLS_CLIENT_AUTH=optional an unverified certificate (another CA,
 * expired) gets through the handshake; it is handed to nobody, so it counts as no certificate.
 */
export function verifiedPeerCertificate(socket: Socket | null | undefined): PeerCertificate | undefined {
  // Duck-typed: HTTP/2's compatibility request exposes a proxy of the session's socket, not a TLSSocket.
  const tls = socket as Partial<TLSSocket> | null | undefined;
  if (tls?.authorized !== true || typeof tls.getPeerCertificate !== "function") return undefined;
  const certificate = tls.getPeerCertificate();
  return certificate?.raw ? certificate : undefined;
}
