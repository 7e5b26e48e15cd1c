import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import type { TlsServing } from "./http-server.js";
import type { TlsSettings } from "./tls-settings.js";

/**
 * The TLS settings' files, read now: the port's certificate chain and key, and the client CA bundle. Throws
 * a message naming the variable whose file cannot be read or used (never the key's contents).
 */
export function loadTlsServing(settings: TlsSettings): TlsServing {
  const context: SecureContextOptions = {
    cert: read("TLS_CERT_FILE", settings.certFile),
    key: read("TLS_KEY_FILE", settings.keyFile),
  };
  if (settings.clientCaFile && settings.clientAuth !== "none")
    context.ca = read("TLS_CLIENT_CA_FILE", settings.clientCaFile);
  try {
    // Fails here, with a message, on a key that does not match the certificate or a malformed PEM.
    createSecureContext(context);
  } catch (err) {
    throw new Error(`TLS_CERT_FILE / TLS_KEY_FILE / TLS_CLIENT_CA_FILE cannot be used: ${(err as Error).message}`);
  }
  return {
    context,
    requestCert: settings.clientAuth !== "none",
    rejectUnauthorized: settings.clientAuth === "required",
  };
}

function read(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(
      `${variable} (${file}) cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/**
 * Rotation without a restart: every `reloadIntervalMs` (and on `check()`, e.g. at SIGHUP) the files are read
 * again; when their contents changed and still make a valid context, `apply` gets it. A half-written or
 * mismatched pair is reported and the current context kept, so a rotation caught midway never breaks the port.
 */
export class TlsFileWatcher {
  private digest: string;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly settings: TlsSettings,
    current: TlsServing,
    private readonly apply: (context: SecureContextOptions) => void,
    private readonly failed: (err: Error) => void,
  ) {
    this.digest = digestOf(current.context);
    this.timer = setInterval(() => this.check(), settings.reloadIntervalMs).unref();
  }

  /** Reads the files now; answers whether a new context was applied. */
  check(): boolean {
    let serving: TlsServing;
    try {
      serving = loadTlsServing(this.settings);
    } catch (err) {
      this.failed(err as Error);
      return false;
    }
    const digest = digestOf(serving.context);
    if (digest === this.digest) return false;
    this.apply(serving.context);
    this.digest = digest;
    return true;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function digestOf(context: SecureContextOptions): string {
  const hash = createHash("sha256");
  for (const part of [context.cert, context.key, context.ca])
    hash.update(part ? (part as Buffer) : Buffer.alloc(0)).update("\0");
  return hash.digest("hex");
}
