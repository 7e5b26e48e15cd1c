import type { EnvReader } from "../domain/env-settings.js";

/**
 * How long the listening port lets a connection take, sit idle, and how many it holds (docs/operating.md
 * "Connections"). A connection that never sends a complete request head, or an h2c one that never sends its
 * SETTINGS, is closed; an idle keep-alive connection is closed; connections over the caps are refused at once.
 */
export interface ConnectionSettings {
  /** From accept to the end of the first request head (HTTP/1.1), and from the first byte of each later request to the end of its head. */
  headersTimeoutMs: number;
  /** From accept to the client's SETTINGS frame on an h2c connection (the preface and SETTINGS come in one packet from every client). */
  http2SettingsTimeoutMs: number;
  /** An HTTP/1.1 keep-alive connection between requests, or an HTTP/2 session with no open stream, is closed after this long. */
  idleTimeoutMs: number;
  /** Longest time to receive one whole HTTP/1.1 request (head and body); 0 = no limit. Responses (streams) are not bounded by it. */
  requestTimeoutMs: number;
  /** Open connections on the port at most; new ones past it are closed at once. 0 = no cap. */
  maxConnections: number;
  /** Open connections from one remote address at most; 0 = no cap (behind a load balancer every client shares its address). */
  maxConnectionsPerClient: number;
}

/** The HTTP_* / HTTP2_* connection timeouts and MAX_CONNECTIONS*. */
export function readConnectionSettings(env: EnvReader): ConnectionSettings {
  const settings: ConnectionSettings = {
    headersTimeoutMs: env.int("HTTP_HEADERS_TIMEOUT_MS", 10_000, 10, 600_000),
    http2SettingsTimeoutMs: env.int("HTTP2_SETTINGS_TIMEOUT_MS", 5_000, 10, 600_000),
    idleTimeoutMs: env.int("HTTP_IDLE_TIMEOUT_MS", 65_000, 10, 3_600_000),
    requestTimeoutMs: env.int("HTTP_REQUEST_TIMEOUT_MS", 300_000, 0, 3_600_000),
    maxConnections: env.int("MAX_CONNECTIONS", 10_000, 0, 1_000_000),
    maxConnectionsPerClient: env.int("MAX_CONNECTIONS_PER_CLIENT", 0, 0, 1_000_000),
  };
  if (settings.requestTimeoutMs > 0 && settings.requestTimeoutMs < settings.headersTimeoutMs) {
    env.problem("HTTP_REQUEST_TIMEOUT_MS must be 0 or at least HTTP_HEADERS_TIMEOUT_MS (a request includes its head)");
  }
  return settings;
}
