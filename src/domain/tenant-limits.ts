/**
 * Limits per tenant, and per API key or OAuth client (TENANT_LIMITS): one JSON setting shaped
 * `{"default": {…}, "tenants": {"<tenant>": {…}}, "keys": {"<key id or client id>": {…}}}`. For one caller each
 * limit is read from the most specific place that names it: its key, then its tenant, then `default`; a limit named
 * nowhere is unlimited (`pushConfigsPerTask` falls back to PUSH_MAX_CONFIGS_PER_TASK instead).
 */

export const LIMIT_NAMES = [
  "requestsPerSecond",
  "burst",
  "runningTasks",
  "tasksPerMinute",
  "streams",
  "pushConfigsPerTask",
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

/** Some limits, each a whole number ≥ 0 (0: none allowed). */
export type Limits = Partial<Record<LimitName, number>>;

export interface TenantLimits {
  default: Limits;
  tenants: Record<string, Limits>;
  keys: Record<string, Limits>;
}

export const NO_TENANT_LIMITS: TenantLimits = { default: {}, tenants: {}, keys: {} };

const SECTIONS = ["default", "tenants", "keys"] as const;
const MAX_LIMIT = 1_000_000_000;

/** Parses TENANT_LIMITS; every problem names the setting and the place in it. */
export function parseTenantLimits(
  raw: string,
  variable = "TENANT_LIMITS",
): { limits: TenantLimits } | { problems: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { problems: [`${variable} must be a JSON object (it does not parse as JSON)`] };
  }
  if (!isObject(parsed)) return { problems: [`${variable} must be a JSON object`] };
  const problems: string[] = [];
  for (const section of Object.keys(parsed))
    if (!(SECTIONS as readonly string[]).includes(section))
      problems.push(`${variable} has an unknown section "${section}" (allowed: ${SECTIONS.join(", ")})`);
  // Without a prototype, so a tenant named "__proto__" or "constructor" is a name like any other.
  const limits: TenantLimits = { default: {}, tenants: Object.create(null), keys: Object.create(null) };
  if (parsed["default"] !== undefined) limits.default = readLimits(parsed["default"], `${variable}.default`, problems);
  for (const section of ["tenants", "keys"] as const) {
    const value = parsed[section];
    if (value === undefined) continue;
    if (!isObject(value)) {
      problems.push(`${variable}.${section} must be an object of names to limits`);
      continue;
    }
    for (const [name, entry] of Object.entries(value))
      limits[section][name] = readLimits(entry, `${variable}.${section}.${name}`, problems);
  }
  return problems.length > 0 ? { problems } : { limits };
}

function readLimits(value: unknown, where: string, problems: string[]): Limits {
  if (!isObject(value)) {
    problems.push(`${where} must be an object of limits`);
    return {};
  }
  const limits: Limits = {};
  for (const [name, limit] of Object.entries(value)) {
    if (!(LIMIT_NAMES as readonly string[]).includes(name)) {
      problems.push(`${where} names an unknown limit "${name}" (known: ${LIMIT_NAMES.join(", ")})`);
      continue;
    }
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
      problems.push(
        `${where}.${name} must be a whole number between 0 and ${MAX_LIMIT} (got ${JSON.stringify(limit)})`,
      );
      continue;
    }
    limits[name as LimitName] = limit;
  }
  return limits;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The caller's limits, each from its most specific place: key (or client id), tenant, default. */
export function limitsFor(settings: TenantLimits, tenant: string | undefined, keyId?: string): Limits {
  return {
    ...settings.default,
    ...(tenant !== undefined && Object.hasOwn(settings.tenants, tenant) ? settings.tenants[tenant] : undefined),
    ...(keyId !== undefined && Object.hasOwn(settings.keys, keyId) ? settings.keys[keyId] : undefined),
  };
}
