import { ConnectError } from "@connectrpc/connect";
import { A2A_VERSION_HEADER, type A2AVersion } from "../../domain/a2a-version.js";
import { negotiateNoted } from "../a2a-version-note.js";
import type { Principal } from "../../auth/principal.js";
import type { PeerCertificate } from "node:tls";
import type { Authenticator } from "../../auth/authenticator.js";
import { connectErrorOf } from "../errors/a2a-error-exits.js";
import type { ReportError } from "../errors/wire-error.js";

/**
 * What every A2A RPC checks before its method runs, shared by connect's interceptor (`a2a-connect-handler.ts`)
 * and the gRPC unary fast path (`grpc-unary-fast-path.ts`): the `a2a-version` metadata (absent or empty = 0.3;
 * a version we do not serve throws VersionNotSupported), then the caller (throws `unauthenticated`) from its
 * credentials and verified client certificate. A Principal straight away for API keys and certificates; a
 * Promise only for token checks, so callers await only when they must.
 */
export function admitRpcCaller(
  authenticator: Authenticator,
  header: (name: string) => string | null,
  peerCertificate: PeerCertificate | undefined,
  served: readonly A2AVersion[],
): Principal | Promise<Principal> {
  negotiateNoted(header(A2A_VERSION_HEADER), served);
  return authenticator.authenticate({
    headers: (name) => header(name) ?? undefined,
    ...(peerCertificate ? { peerCertificate } : {}),
  });
}

/**
 * An error of an RPC as the status it answers in the service's version. ConnectErrors raised by the framework
 * (cancellation, deadline, malformed input) keep their code; anything else is reported and mapped.
 */
export function rpcErrorOf(version: A2AVersion, report: ReportError, rpc: string, err: unknown): ConnectError {
  return err instanceof ConnectError ? err : connectErrorOf(version, report(err, { rpc }));
}
