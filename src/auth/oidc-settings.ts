import { readFileSync } from "node:fs";
import { readCaBundle } from "../egress/ca-bundle.js";
import { SCOPES, type Scope } from "./principal.js";

/** One identity provider whose access tokens we take: for which audience, and where tenant and scopes are read. */
export interface OidcIssuerSettings {
  /** The `iss` its tokens carry, exactly; discovery is `{issuer}/.well-known/openid-configuration`. */
  issuer: string;
  /** The `aud` its tokens must carry (this host's identifier at the identity provider). */
  audience: string;
  /** The claim naming the caller's tenant (default `tenant`); not read when `tenant` is set. */
  tenantClaim: string;
  /**
   * The one tenant of every caller this issuer vouches for (an issuer per tenant), for identity providers whose
   * tokens name no tenant; set it or `tenantClaim`, not both.
   */
  tenant?: string;
  /** The claim holding scopes, space-separated or an array (default `scope`; `scp` is read too). */
  scopeClaim: string;
  /** The claim holding the caller's groups (an array, or space-separated); each maps to scopes in `groupScopes`. */
  groupsClaim?: string;
  /** Host scopes granted to members of a group, by group name (added to the token's own scopes). */
  groupScopes?: Readonly<Record<string, readonly Scope[]>>;
  /** CA certificates (PEM) trusted for the issuer's discovery and JWKS, instead of Node's default ones. */
  ca?: string;
  /** Where `ca` was read from, for messages. */
  caFile?: string;
  /** The longest a token may live: `exp − iat` and `exp − now` at most this; a token without `iat` is refused. */
  maxTokenLifetimeSeconds: number;
  /** An http:// loopback issuer (tests only; refused in production). */
  allowInsecure: boolean;
}

/** OIDC bearer tokens in: the issuers (a token is checked against the one its `iss` names), and the JWKS cool-down. */
export interface OidcSettings {
  issuers: OidcIssuerSettings[];
  /** An unknown `kid` refetches the issuer's JWKS at most this often (a rotated-in key waits at most this long). */
  jwksCooldownMs: number;
}

/** RFC 9068 access tokens live minutes to hours; a day covers every identity provider's default. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 86_400;
const MAX_TOKEN_LIFETIME_RANGE = [60, 31_536_000] as const;
/** jose's own default is 30 s, which keeps a key the IdP just rotated in refused for as long. */
export const DEFAULT_JWKS_COOLDOWN_MS = 3_000;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);
const ISSUER_FIELDS = new Set([
  "issuer",
  "audience",
  "tenantClaim",
  "tenant",
  "scopeClaim",
  "groupsClaim",
  "groupScopes",
  "caFile",
  "maxTokenLifetimeSeconds",
]);

type Env = Record<string, string | undefined>;

/**
 * `AUTH_OIDC_ISSUERS` (a JSON list, or `AUTH_OIDC_ISSUERS_FILE`) or the one-issuer shorthand `AUTH_OIDC_ISSUER` with
 * `AUTH_OIDC_AUDIENCE`, `AUTH_TENANT_CLAIM`, `AUTH_SCOPE_CLAIM`. `AUTH_OIDC_CA_FILE` and
 * `AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS` are the defaults of every issuer's `caFile` and `maxTokenLifetimeSeconds`.
 * Undefined when no issuer is configured; every problem found otherwise, one message each (never a file's content).
 */
export function loadOidcSettings(env: Env, production: boolean): OidcSettings | undefined | string[] {
  const problems: string[] = [];
  const value = (name: string): string | undefined => (env[name] === "" ? undefined : env[name]);
  const allowInsecure = value("AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS") === "true";
  if (allowInsecure && production)
    problems.push("AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS is test-only and is refused when NODE_ENV=production");
  const lifetime =
    wholeNumber(
      value("AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS"),
      "AUTH_OIDC_MAX_TOKEN_LIFETIME_SECONDS",
      MAX_TOKEN_LIFETIME_RANGE,
      problems,
    ) ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS;
  const cooldown =
    wholeNumber(value("AUTH_OIDC_JWKS_COOLDOWN_MS"), "AUTH_OIDC_JWKS_COOLDOWN_MS", [100, 300_000], problems) ??
    DEFAULT_JWKS_COOLDOWN_MS;
  const defaults = { caFile: value("AUTH_OIDC_CA_FILE"), maxTokenLifetimeSeconds: lifetime, allowInsecure };

  const list = issuerList(env, problems);
  const single = value("AUTH_OIDC_ISSUER");
  let raws: Array<{ where: string; raw: Record<string, unknown> }> = [];
  if (list !== undefined && single !== undefined)
    problems.push("set AUTH_OIDC_ISSUERS (several issuers) or AUTH_OIDC_ISSUER (one), not both");
  else if (list !== undefined) raws = list;
  else if (single !== undefined) {
    const raw: Record<string, unknown> = {
      issuer: single,
      audience: value("AUTH_OIDC_AUDIENCE"),
      tenantClaim: value("AUTH_TENANT_CLAIM"),
      scopeClaim: value("AUTH_SCOPE_CLAIM"),
    };
    if (raw["audience"] === undefined)
      problems.push("AUTH_OIDC_ISSUER needs AUTH_OIDC_AUDIENCE (the audience this host's tokens are issued for)");
    else raws = [{ where: "AUTH_OIDC_ISSUER", raw }];
  } else if (value("AUTH_OIDC_AUDIENCE") !== undefined) problems.push("AUTH_OIDC_AUDIENCE needs AUTH_OIDC_ISSUER");

  const issuers = raws
    .map(({ where, raw }) => parseIssuer(raw, where, defaults, problems))
    .filter((i): i is OidcIssuerSettings => i !== undefined);
  const seen = new Set<string>();
  for (const { issuer } of issuers) {
    if (seen.has(issuer))
      problems.push(
        `AUTH_OIDC_ISSUERS names the issuer ${issuer} twice (a token is checked against the one issuer its "iss" names)`,
      );
    seen.add(issuer);
  }
  if (problems.length > 0) return problems;
  return issuers.length > 0 ? { issuers, jwksCooldownMs: cooldown } : undefined;
}

/** The entries of AUTH_OIDC_ISSUERS or AUTH_OIDC_ISSUERS_FILE (JSON), undefined when neither is set. */
function issuerList(env: Env, problems: string[]): Array<{ where: string; raw: Record<string, unknown> }> | undefined {
  const inline = env["AUTH_OIDC_ISSUERS"] || undefined;
  const file = env["AUTH_OIDC_ISSUERS_FILE"] || undefined;
  if (inline === undefined && file === undefined) return undefined;
  if (inline !== undefined && file !== undefined) {
    problems.push("set AUTH_OIDC_ISSUERS or AUTH_OIDC_ISSUERS_FILE, not both");
    return [];
  }
  let text = inline;
  const name = inline !== undefined ? "AUTH_OIDC_ISSUERS" : `AUTH_OIDC_ISSUERS_FILE ${file}`;
  if (file !== undefined) {
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      problems.push(
        `AUTH_OIDC_ISSUERS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? "unreadable"})`,
      );
      return [];
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text!);
  } catch {
    problems.push(
      `${name} must be a JSON array of {"issuer", "audience", "tenantClaim"? | "tenant"?, "scopeClaim"?, "groupsClaim"?, "groupScopes"?, "caFile"?, "maxTokenLifetimeSeconds"?}`,
    );
    return [];
  }
  if (!Array.isArray(value) || value.length === 0) {
    problems.push(`${name} must be a non-empty JSON array of issuers`);
    return [];
  }
  return value.map((raw: unknown, i) => ({ where: `${name}[${i}]`, raw: isObject(raw) ? raw : {} }));
}

/** How a field of one issuer is named in a problem: `AUTH_OIDC_ISSUERS[1].audience`, or the shorthand's variable. */
type FieldName = (field: string) => string;

const SHORTHAND: Record<string, string> = {
  issuer: "AUTH_OIDC_ISSUER",
  audience: "AUTH_OIDC_AUDIENCE",
  tenantClaim: "AUTH_TENANT_CLAIM",
  scopeClaim: "AUTH_SCOPE_CLAIM",
};

function parseIssuer(
  raw: Record<string, unknown>,
  where: string,
  defaults: { caFile: string | undefined; maxTokenLifetimeSeconds: number; allowInsecure: boolean },
  problems: string[],
): OidcIssuerSettings | undefined {
  const before = problems.length;
  const name: FieldName =
    where === "AUTH_OIDC_ISSUER" ? (field) => SHORTHAND[field] ?? field : (field) => `${where}.${field}`;
  const bad = (field: string, message: string): void => void problems.push(`${name(field)} ${message}`);
  for (const key of Object.keys(raw))
    if (!ISSUER_FIELDS.has(key))
      problems.push(`${where}: unknown field "${key}" (known: ${[...ISSUER_FIELDS].join(", ")})`);
  const issuer = raw["issuer"];
  let url: URL | undefined;
  try {
    url = typeof issuer === "string" ? new URL(issuer) : undefined;
  } catch {
    url = undefined;
  }
  const insecureOk = defaults.allowInsecure && url?.protocol === "http:" && LOOPBACK.has(url.hostname);
  if (!url || (url.protocol !== "https:" && !insecureOk))
    bad(
      "issuer",
      `must be an https:// URL (http:// only on loopback with AUTH_OIDC_ALLOW_INSECURE_FOR_TESTS=true)${typeof issuer === "string" ? ` (got "${issuer}")` : ""}`,
    );
  const audience = raw["audience"];
  if (typeof audience !== "string" || !audience)
    bad("audience", "must be a non-empty string (the `aud` this host's tokens are issued for)");
  const claim = (field: string, fallback: string | undefined): string | undefined => {
    const v = raw[field];
    if (v === undefined) return fallback;
    if (typeof v !== "string" || !v) bad(field, "must be a non-empty claim name");
    return typeof v === "string" ? v : fallback;
  };
  const tenantClaim = claim("tenantClaim", "tenant")!;
  const tenant = raw["tenant"];
  if (tenant !== undefined && (typeof tenant !== "string" || !/^[A-Za-z0-9._~-]{1,128}$/.test(tenant)))
    bad("tenant", "must be a tenant id (1 to 128 of A-Z a-z 0-9 . _ ~ -)");
  if (tenant !== undefined && raw["tenantClaim"] !== undefined)
    bad("tenant", "and tenantClaim exclude each other: every token of the issuer is in `tenant`, or names its own");
  const scopeClaim = claim("scopeClaim", "scope")!;
  const groupsClaim = claim("groupsClaim", undefined);
  const groupScopes = parseGroupScopes(raw["groupScopes"], (m) => bad("groupScopes", m));
  if (groupScopes !== undefined && groupsClaim === undefined)
    bad("groupScopes", "needs groupsClaim (the claim holding the caller's groups)");
  const lifetimeRaw = raw["maxTokenLifetimeSeconds"];
  const [min, max] = MAX_TOKEN_LIFETIME_RANGE;
  if (
    lifetimeRaw !== undefined &&
    !(Number.isInteger(lifetimeRaw) && (lifetimeRaw as number) >= min && (lifetimeRaw as number) <= max)
  )
    bad("maxTokenLifetimeSeconds", `must be a whole number of seconds between ${min} and ${max}`);
  const caFile = raw["caFile"] !== undefined ? raw["caFile"] : defaults.caFile;
  let ca: string | undefined;
  if (caFile !== undefined) {
    const caWhere = raw["caFile"] !== undefined ? name("caFile") : "AUTH_OIDC_CA_FILE";
    if (typeof caFile !== "string" || !caFile)
      problems.push(`${caWhere} must be the path of a PEM file of CA certificates`);
    else ca = readCaBundle(caFile, caWhere, (m) => problems.push(m));
  }
  if (problems.length > before) return undefined;
  return {
    // Compared exactly with `iss`: kept as written, only a trailing slash of discovery's base is dropped later.
    issuer: issuer as string,
    audience: audience as string,
    tenantClaim,
    ...(typeof tenant === "string" ? { tenant } : {}),
    scopeClaim,
    ...(groupsClaim !== undefined ? { groupsClaim } : {}),
    ...(groupScopes !== undefined ? { groupScopes } : {}),
    ...(ca !== undefined ? { ca, caFile: caFile as string } : {}),
    maxTokenLifetimeSeconds: (lifetimeRaw as number | undefined) ?? defaults.maxTokenLifetimeSeconds,
    allowInsecure: defaults.allowInsecure,
  };
}

function parseGroupScopes(raw: unknown, bad: (message: string) => void): Record<string, Scope[]> | undefined {
  if (raw === undefined) return undefined;
  const valid =
    isObject(raw) &&
    Object.values(raw).every(
      (scopes) => Array.isArray(scopes) && scopes.every((s) => (SCOPES as readonly unknown[]).includes(s)),
    );
  if (!valid) {
    bad(`must map group names to arrays of ${SCOPES.join(", ")}`);
    return undefined;
  }
  return raw as Record<string, Scope[]>;
}

function wholeNumber(
  raw: string | undefined,
  name: string,
  [min, max]: readonly [number, number],
  problems: string[],
): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (Number.isInteger(value) && value >= min && value <= max) return value;
  problems.push(`${name} must be a whole number between ${min} and ${max} (got "${raw}")`);
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
