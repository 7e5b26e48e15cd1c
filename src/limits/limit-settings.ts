import { closestName } from "../domain/closest-name.js";
import type { EnvReader } from "../domain/env-settings.js";

/**
 * TENANT_LIMITS (or TENANT_LIMITS_FILE): what each tenant, and each API key or OAuth client, may take of this host
 * (docs/operating.md "Tenant limits"). One JSON object, `{"default": {…}, "tenants": {"<tenant>": {…}}, "keys":
 * {"<API key id or OAuth client id>": {…}}}`; for each limit the most specific entry that names it wins (the key's,
 * then the tenant's, then the default). A limit that no entry names is unlimited; `null` in an entry says so
 * explicitly (a tenant without the default's cap).
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

/** One entry: a number per limit it sets, `null` for "unlimited" (overriding a less specific entry). */
export type LimitEntry = Partial<Record<LimitName, number | null>>;

export interface TenantLimitSettings {
  default: LimitEntry;
  tenants: Readonly<Record<string, LimitEntry>>;
  keys: Readonly<Record<string, LimitEntry>>;
}

/** The whole limits that are counts; the rates may be fractions (0.5 requests per second). */
const WHOLE: ReadonlySet<LimitName> = new Set(["burst", "runningTasks", "streams", "pushConfigsPerTask"]);
/** PUSH_MAX_CONFIGS_PER_TASK's own bounds hold for pushConfigsPerTask too (the store refuses past its cap). */
const MAX: Partial<Record<LimitName, number>> = { pushConfigsPerTask: 1_000 };
const SECTIONS = ["default", "tenants", "keys"] as const;

/** Overload shedding: OVERLOAD_EVENT_LOOP_DELAY_MS and OVERLOAD_STORE_LATENCY_MS (0 turns a check off). */
export interface OverloadSettings {
  /** New tasks are refused while the event loop's p90 delay over the last second is above this (ms). */
  eventLoopDelayMs: number;
  /** New tasks are refused while the store's ping took longer than this (ms) at the last check. */
  storeLatencyMs: number;
}

export const DEFAULT_OVERLOAD_EVENT_LOOP_DELAY_MS = 500;
export const DEFAULT_OVERLOAD_STORE_LATENCY_MS = 2_000;

export function readOverloadSettings(reader: EnvReader): OverloadSettings {
  return {
    eventLoopDelayMs: reader.int("OVERLOAD_EVENT_LOOP_DELAY_MS", DEFAULT_OVERLOAD_EVENT_LOOP_DELAY_MS, 0, 600_000),
    storeLatencyMs: reader.int("OVERLOAD_STORE_LATENCY_MS", DEFAULT_OVERLOAD_STORE_LATENCY_MS, 0, 600_000),
  };
}

/**
 * TENANT_LIMITS, checked whole: malformed JSON, an unknown section or limit name, a value that is not a number ≥ 0
 * (a whole one for counts) is a start problem naming where it is. `pushConfigsPerTask` defaults to
 * PUSH_MAX_CONFIGS_PER_TASK (`pushMaxConfigsPerTask`) unless the default entry names it; every other limit is
 * unlimited by default, so one user's host behaves as before.
 */
export function readTenantLimitSettings(reader: EnvReader, pushMaxConfigsPerTask: number): TenantLimitSettings {
  const settings: TenantLimitSettings = { default: {}, tenants: {}, keys: {} };
  const raw = reader.raw("TENANT_LIMITS");
  let parsed: unknown = {};
  if (raw !== undefined) {
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      reader.problem(`TENANT_LIMITS is not JSON: ${(err as Error).message}`);
    }
  }
  const problem = (message: string) => reader.problem(`TENANT_LIMITS: ${message}`);
  if (!isObject(parsed)) {
    problem(`must be an object {"default": {…}, "tenants": {…}, "keys": {…}}`);
    parsed = {};
  }
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    const section = SECTIONS.find((s) => s === name);
    if (!section) {
      const near = closestName(name, SECTIONS);
      problem(
        `unknown section "${name}"${near ? ` (did you mean "${near}"?)` : ""}; the sections are ${SECTIONS.join(", ")}`,
      );
      continue;
    }
    if (section === "default") {
      settings.default = entryOf(value, "default", problem);
      continue;
    }
    if (!isObject(value)) {
      problem(`${section} must be an object of entries by ${section === "tenants" ? "tenant" : "key or client id"}`);
      continue;
    }
    const entries: Record<string, LimitEntry> = {};
    for (const [id, entry] of Object.entries(value)) entries[id] = entryOf(entry, `${section}.${id}`, problem);
    settings[section] = entries;
  }
  if (settings.default.pushConfigsPerTask === undefined)
    settings.default = { ...settings.default, pushConfigsPerTask: pushMaxConfigsPerTask };
  return settings;
}

function entryOf(value: unknown, path: string, problem: (message: string) => void): LimitEntry {
  if (!isObject(value)) {
    problem(`${path} must be an object of limits (${LIMIT_NAMES.join(", ")})`);
    return {};
  }
  const entry: LimitEntry = {};
  for (const [name, limit] of Object.entries(value)) {
    const known = LIMIT_NAMES.find((n) => n === name);
    if (!known) {
      const near = closestName(name, LIMIT_NAMES);
      problem(
        `${path}.${name} is not a limit${near ? ` (did you mean "${near}"?)` : ""}; the limits are ${LIMIT_NAMES.join(", ")}`,
      );
      continue;
    }
    if (limit === null) {
      entry[known] = null;
      continue;
    }
    const max = MAX[known] ?? Number.MAX_SAFE_INTEGER;
    const whole = WHOLE.has(known);
    if (
      typeof limit !== "number" ||
      !Number.isFinite(limit) ||
      limit < 0 ||
      limit > max ||
      (whole && !Number.isInteger(limit))
    ) {
      problem(
        `${path}.${known} must be ${whole ? "a whole number" : "a number"} ${MAX[known] ? `from 0 to ${max}` : "of 0 or more"}, or null for no limit (got ${JSON.stringify(limit)})`,
      );
      continue;
    }
    entry[known] = limit;
  }
  return entry;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
