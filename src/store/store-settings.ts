import { DEFAULT_TASK_SIZE_LIMITS, type TaskSizeLimits } from "./task-size-limits.js";

/** The task store's settings (README "Configuration"). */
export interface StoreSettings {
  limits: TaskSizeLimits;
  /**
   * Test-only fault seam (`OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE=<event type>`): the MongoDB store SIGKILLs its
   * own process right after writing a batch of events that contains this type, before the task head moves.
   * The durability test uses it to crash between the two writes; refused in production.
   */
  killAfterEventsWriteOf?: string;
}

type Env = Record<string, string | undefined>;

const MIB = 1024 * 1024;

/** Reads MAX_MESSAGE_BYTES, MAX_ARTIFACT_BYTES, MAX_TASK_BYTES. Returns an error message instead of throwing, so config.ts keeps one error type. */
export function loadStoreSettings(env: Env, production: boolean): StoreSettings | string {
  const limits = { ...DEFAULT_TASK_SIZE_LIMITS };
  const fields = [
    ["MAX_MESSAGE_BYTES", "maxMessageBytes"],
    ["MAX_ARTIFACT_BYTES", "maxArtifactBytes"],
    ["MAX_TASK_BYTES", "maxTaskBytes"],
  ] as const;
  for (const [name, field] of fields) {
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1024 || value > 15 * MIB) return `${name} must be a whole number of bytes between 1024 and ${15 * MIB} (got "${raw}")`;
    limits[field] = value;
  }
  const kill = env["OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE"] || undefined;
  if (kill && production) return "OPENWOP_TEST_KILL_AFTER_EVENTS_WRITE is a test-only fault seam and is refused when NODE_ENV=production";
  return { limits, ...(kill ? { killAfterEventsWriteOf: kill } : {}) };
}
