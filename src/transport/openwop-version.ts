import { DomainError, invalidParams } from "../domain/errors.js";
import type { HttpRequest } from "./http-io.js";

/**
 * OpenWOP major negotiation (spec/v2/core/versioning.md §1, openwop/openwop a98b0205 and its Stable text): the
 * `OpenWOP-Version` request header selects the major on an unversioned path, `/v1/…` paths are major 1, and every
 * protocol response names the contract that produced it in the response header.
 */
export const OPENWOP_VERSION_HEADER = "OpenWOP-Version";
/** The `<major>.<minor>` this host serves of each major. */
export const OPENWOP_CONTRACTS = { 1: "1.0", 2: "2.0" } as const;
export type OpenwopMajor = keyof typeof OPENWOP_CONTRACTS;

export interface OpenwopVersions {
  /** False once the overlap has ended (OPENWOP_V1=retired): v2 only, no /v1 path, header-less means 2. */
  v1: boolean;
  /** OPENWOP_MIN_CLIENT_VERSION (`<major>.<minor>`): OpenWOP 2 clients announcing an older release get 426. */
  minClientVersion?: string;
}

/** The `<major>.<minor>` grammar of protocol versions (versioning.md axis 1). */
export const PROTOCOL_VERSION = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;
/** `OpenWOP-Client-Version` (versioning.md §1.5): `<major>.<minor>[.<patch>]`, no leading zeros; else absent. */
const CLIENT_VERSION = /^(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})(?:\.(0|[1-9][0-9]{0,5}))?$/;

/** `protocolVersions[]` and `preferredVersion` (through the overlap the 1.x member: a header-less caller is v1). */
export function advertisedVersions(versions: OpenwopVersions): {
  protocolVersions: string[];
  preferredVersion: string;
} {
  return versions.v1
    ? { protocolVersions: [OPENWOP_CONTRACTS[1], OPENWOP_CONTRACTS[2]], preferredVersion: OPENWOP_CONTRACTS[1] }
    : { protocolVersions: [OPENWOP_CONTRACTS[2]], preferredVersion: OPENWOP_CONTRACTS[2] };
}

/**
 * The protocol operations' paths (spec/v2/path-manifest.json, openwop/openwop 02c7b491, the rows this host serves,
 * and their /v1 twins): only their responses name a major. Shells, the console, seams, health and the host's own
 * routes have none.
 */
const PROTOCOL_PATH = /^(\/v1)?\/(runs(\/|$|:)|interrupts\/|workflows(\/|$)|openapi\.json$)|^\/\.well-known\/openwop$/;

export function isProtocolPath(path: string): boolean {
  return PROTOCOL_PATH.test(path);
}

/**
 * The major a request on a protocol path is served under, or the refusal: a malformed or repeated header is a
 * validation error, an unserved major 406 (with `details.protocolVersions`), a /v1 path with another major 400.
 * A refusal is answered under the header-less default major, a client-version refusal under 2 (`refusalMajor`).
 */
export function negotiatedMajor(req: HttpRequest, path: string, versions: OpenwopVersions): OpenwopMajor {
  const raw = req.headers["openwop-version"];
  const v1Path = path.startsWith("/v1/");
  // Once v1 is retired no /v1 route exists: the 404 is a v2 answer.
  if (v1Path && !versions.v1) return 2;
  const fallback: OpenwopMajor = v1Path || versions.v1 ? 1 : 2;
  if (raw === undefined) return fallback === 2 ? checkClientVersion(req, versions) : fallback;
  // Node joins repeated headers it does not know with ", ": two values are one header sent twice.
  const value = (Array.isArray(raw) ? raw.join(", ") : raw).trim();
  const parsed = /^(0|[1-9][0-9]{0,5})(?:\.(0|[1-9][0-9]{0,5}))?$/.exec(value);
  if (!parsed) {
    throw invalidParams(
      `${OPENWOP_VERSION_HEADER} must be one major, as "2" or "2.0" (got ${JSON.stringify(value.slice(0, 40))})`,
      { path: `header.${OPENWOP_VERSION_HEADER}` },
    );
  }
  const major = Number(parsed[1]);
  if (v1Path) {
    if (major === 1) return 1;
    throw new DomainError(
      "protocol-version-mismatch",
      `a /v1 path is OpenWOP 1; ${OPENWOP_VERSION_HEADER}: ${value} selects major ${major}: send 1 or drop the header, or use the unversioned path`,
      { protocolVersions: advertisedVersions(versions).protocolVersions },
    );
  }
  if (major === 2) return checkClientVersion(req, versions);
  if (major === 1 && versions.v1) return major;
  throw new DomainError(
    "protocol-version-unsupported",
    `this host serves OpenWOP ${advertisedVersions(versions).protocolVersions.join(" and ")}, not major ${major}`,
    { protocolVersions: advertisedVersions(versions).protocolVersions },
  );
}

/**
 * Under major 2 with a floor advertised, a well-formed `OpenWOP-Client-Version` whose major.minor is below it is
 * refused 426 `client_version_unsupported` (`details.minClientVersion`); no header, or a malformed one, is served.
 */
function checkClientVersion(req: HttpRequest, versions: OpenwopVersions): 2 {
  const floor = versions.minClientVersion;
  const raw = req.headers["openwop-client-version"];
  if (floor === undefined || typeof raw !== "string") return 2;
  const client = CLIENT_VERSION.exec(raw.trim());
  if (!client) return 2;
  const [floorMajor, floorMinor] = floor.split(".").map(Number) as [number, number];
  const [clientMajor, clientMinor] = [Number(client[1]), Number(client[2])];
  if (clientMajor > floorMajor || (clientMajor === floorMajor && clientMinor >= floorMinor)) return 2;
  throw new DomainError(
    "client-version-unsupported",
    `this host serves OpenWOP 2 clients built against ${floor} or later (OpenWOP-Client-Version: ${raw.trim()})`,
    { minClientVersion: floor },
  );
}

/** The major a refused negotiation is answered under: the path's, else the header-less default. */
export function refusalMajor(versions: OpenwopVersions, err: unknown): OpenwopMajor {
  if (err instanceof DomainError && err.code === "client-version-unsupported") return 2;
  return versions.v1 ? 1 : 2;
}

/** Unversioned paths are the v2 surface; a request served under major 1 there (header-less in the overlap) has none. */
export function requireMajor2(req: HttpRequest, template: string, versions: OpenwopVersions): void {
  const path = new URL(req.url ?? "/", "http://host").pathname;
  if (negotiatedMajor(req, path, versions) === 2) return;
  throw invalidParams(
    `${template} is the OpenWOP 2 surface: send "OpenWOP-Version: 2", or use /v1${template} for OpenWOP 1`,
    { path: `header.${OPENWOP_VERSION_HEADER}` },
  );
}
