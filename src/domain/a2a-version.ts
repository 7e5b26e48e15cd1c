import { DomainError } from "./errors.js";

/**
 * A2A protocol versions served side by side (wire facts §5.4, §5.7). Every binding routes a call to one
 * version by its shape (JSON-RPC method name, gRPC service, REST path), and every binding checks the
 * version the caller asked for with `A2A-Version` (header, `?A2A-Version=` query parameter, or gRPC
 * metadata `a2a-version`): absent or empty means 0.3, and a version we do not serve is refused with
 * VersionNotSupported (-32009 / FAILED_PRECONDITION / HTTP 400). On HTTP+JSON the header also picks the
 * router where a path reads both ways (`/v1/tasks/{id}` is v0.3, or v1.0 in tenant "v1").
 */
export const A2A_VERSIONS = ["0.3", "1.0"] as const;
/**
 * Draft versions: served only when A2A_DRAFT_VERSIONS names them (the served set is then the keys of
 * `bindVersions`, which every binding negotiates against), never offered to peers, never preferred.
 */
export const A2A_DRAFT_VERSIONS = ["1.1"] as const;
export type A2AVersion = (typeof A2A_VERSIONS)[number] | (typeof A2A_DRAFT_VERSIONS)[number];

/** What a request, card or recorded endpoint that names no version speaks (the protocol before versions were named). */
export const UNNAMED_A2A_VERSION: A2AVersion = "0.3";

/** Every served version, newest first (compared as numbers): the peer client's order of preference. */
export const A2A_VERSIONS_NEWEST_FIRST: readonly A2AVersion[] = [...A2A_VERSIONS].sort((a, b) => {
  const [aMajor = 0, aMinor = 0] = a.split(".").map(Number);
  const [bMajor = 0, bMinor = 0] = b.split(".").map(Number);
  return bMajor - aMajor || bMinor - aMinor;
});

/** The version new clients should use (discovery `preferredVersion`, first on the card). */
export const PREFERRED_A2A_VERSION: A2AVersion = "1.0";

/** Header name as HTTP/2 and Node present it (lower case); also the gRPC metadata key. */
export const A2A_VERSION_HEADER = "a2a-version";
export const A2A_VERSION_QUERY = "A2A-Version";

/** `Major.Minor`; a patch part, which clients should not send, is tolerated and ignored ("1.0.0" is 1.0). */
const VERSION = /^(\d{1,4})\.(\d{1,4})(?:\.\d{1,4})?$/;

/**
 * The version a request asks for among `served` (the released versions, plus the drafts switched on); throws
 * version-not-supported for anything else: a draft that is off is refused exactly as an unknown version.
 */
export function negotiateA2AVersion(
  requested: string | undefined | null,
  served: readonly A2AVersion[] = A2A_VERSIONS,
): A2AVersion {
  const raw = (requested ?? "").trim();
  if (raw === "") return UNNAMED_A2A_VERSION;
  const found = VERSION.exec(raw);
  const version = found ? `${Number(found[1])}.${Number(found[2])}` : undefined;
  const match = served.find((v) => v === version);
  if (match) return match;
  throw new DomainError(
    "version-not-supported",
    `A2A-Version ${JSON.stringify(raw.slice(0, 40))} is not supported; this agent serves ${served.join(" and ")}`,
    {
      requestedVersion: raw.slice(0, 40),
      supportedVersions: served.join(","),
    },
  );
}

type HeaderBag = Record<string, string | string[] | undefined>;

/** The raw `A2A-Version` of an HTTP request: the header, else the query parameter (name matched case-insensitively). */
export function requestedA2AVersion(headers: HeaderBag, url: string | undefined): string | undefined {
  const header = headers[A2A_VERSION_HEADER];
  const value = Array.isArray(header) ? header[0] : header;
  if (value !== undefined && value.trim() !== "") return value;
  const query = url?.indexOf("?") ?? -1;
  if (query < 0) return undefined;
  for (const [name, v] of new URLSearchParams(url!.slice(query + 1))) {
    if (name.toLowerCase() === A2A_VERSION_QUERY.toLowerCase()) return v;
  }
  return undefined;
}

/** Negotiates from an HTTP request's header or query parameter. */
export function a2aVersionOf(
  req: { headers: HeaderBag; url?: string | undefined },
  served?: readonly A2AVersion[],
): A2AVersion {
  return negotiateA2AVersion(requestedA2AVersion(req.headers, req.url), served);
}
