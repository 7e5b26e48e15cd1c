import type { Snapshot } from "xstate";
import { DomainError } from "../domain/errors.js";
import type { TaskContext } from "./task-context.js";
import type { Message } from "../domain/a2a-types.js";
import { RECENT_HISTORY, TASK_MACHINE_VERSION, taskMachine } from "./task-machine.js";
import type { TaskSnapshot } from "./task-projection.js";

/** Snapshots stored before the version was recorded were written by version 1. */
const UNVERSIONED = 1;

/**
 * Migrations of older snapshots to the current machine, keyed by the version they read. A version missing
 * here (and not current) is refused, never guessed at.
 */
const MIGRATIONS: Record<number, (persisted: Record<string, unknown>) => Record<string, unknown>> = {
  // Version 1 kept the whole A2A history in the context, and its log events carry no messages. The history
  // it had stays in the head (`unloggedHistory`, no longer growing); what is appended from now on is logged.
  1: (persisted) => {
    const context = persisted["context"] as Record<string, unknown>;
    // Already counted: a current snapshot persisted without its version (XState's getPersistedSnapshot).
    if (typeof context["historyCount"] === "number") return persisted;
    const history = (context["history"] ?? []) as Message[];
    return {
      ...persisted,
      context: {
        ...context,
        request: history.find((m) => m.role === "user") ?? history[0],
        historyCount: history.length,
        history: history.slice(Math.max(0, history.length - RECENT_HISTORY)),
        ...(history.length > 0 ? { unloggedHistory: history } : {}),
      },
    };
  },
};

/**
 * The persisted XState snapshot as plain JSON (no class instances) with the machine version it was written by,
 * frozen all through: nothing changes a stored snapshot, and the memory store, which keeps what it is given
 * frozen, then has nothing left to walk (freezing it there was a second walk of every snapshot per commit).
 */
export function persistTaskSnapshot(snapshot: TaskSnapshot, previous?: PersistedCopy): Record<string, unknown> {
  if (previous?.source === snapshot) return previous.persisted as Record<string, unknown>;
  const persisted = flatPersistedSnapshot(snapshot, previous) ?? {
    ...(jsonCopy(taskMachine.getPersistedSnapshot(snapshot)) as Record<string, unknown>),
  };
  persisted["machineVersion"] = TASK_MACHINE_VERSION;
  return Object.freeze(persisted);
}

/**
 * A snapshot and its persisted copy, kept for the task's next write: a transition replaces only the context
 * members it changes (XState's `assign` keeps the others as they were), so the next copy takes the unchanged
 * ones from this copy instead of copying them again, and the same snapshot written twice is copied once.
 */
export interface PersistedCopy {
  source: TaskSnapshot;
  /** What `persistTaskSnapshot` made of `source`. */
  persisted: unknown;
}

/**
 * XState's persisted form of a snapshot of our flat machine (no child actors, no history states), built
 * without `getPersistedSnapshot`'s walk of the whole context looking for actor references that this machine
 * never holds (a unit test checks it equals XState's), and copied. Undefined when the snapshot is not that simple.
 */
function flatPersistedSnapshot(
  snapshot: TaskSnapshot,
  previous: PersistedCopy | undefined,
): Record<string, unknown> | undefined {
  const { status, output, error, value, historyValue, children, context } = snapshot;
  if (Object.keys(children).length > 0 || Object.keys(historyValue).length > 0) return undefined;
  const before = previous?.source.context as Record<string, unknown> | undefined;
  const beforeCopy = (previous?.persisted as Record<string, unknown> | undefined)?.["context"] as
    Record<string, unknown> | undefined;
  const copy: Record<string, unknown> = {};
  for (const key in context) {
    if (!Object.hasOwn(context, key)) continue;
    const item = (context as unknown as Record<string, unknown>)[key];
    if (dropped(item)) continue;
    copy[key] =
      before && beforeCopy && before[key] === item && Object.hasOwn(beforeCopy, key) ? beforeCopy[key] : jsonCopy(item);
  }
  // As JSON has them: members that are undefined are left out.
  const persisted: Record<string, unknown> = { status };
  if (!dropped(output)) persisted["output"] = jsonCopy(output);
  if (!dropped(error)) persisted["error"] = jsonCopy(error);
  persisted["value"] = jsonCopy(value);
  persisted["historyValue"] = EMPTY;
  persisted["context"] = Object.freeze(copy);
  persisted["children"] = EMPTY;
  return persisted;
}

const EMPTY = Object.freeze({});

/**
 * What `JSON.parse(JSON.stringify(value))` gives (undefined members dropped, `toJSON` applied, functions
 * gone), frozen, by one walk instead of a string round trip: about five times faster on a task snapshot, and
 * this runs on every store write.
 */
function jsonCopy(value: unknown): unknown {
  if (value === null || typeof value !== "object")
    return typeof value === "number" && !Number.isFinite(value) ? null : value;
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === "function") return jsonCopy(withJson.toJSON());
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = dropped(value[i]) ? null : jsonCopy(value[i]);
    return Object.freeze(copy);
  }
  const copy: Record<string, unknown> = {};
  // for...in over own keys: no entries array per object (this walk runs on every store write).
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    if (!dropped(item)) copy[key] = jsonCopy(item);
  }
  return Object.freeze(copy);
}

/** Members JSON leaves out of objects (and writes as null in arrays). */
function dropped(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

/**
 * The one way back from a stored snapshot: checks the machine version it was written by and migrates it to
 * the current one. An unknown version is an internal error naming the task (never a silent misread).
 */
export function restorePersistedSnapshot(
  stored: unknown,
  taskId = "(unknown task)",
): Snapshot<unknown> & { context: TaskContext } {
  if (stored === null || typeof stored !== "object") {
    throw new DomainError("internal", `the stored snapshot of task ${taskId} is not an object`, { taskId });
  }
  const { machineVersion, ...persisted } = stored as Record<string, unknown>;
  let version = machineVersion === undefined ? UNVERSIONED : machineVersion;
  let current: Record<string, unknown> = persisted;
  while (version !== TASK_MACHINE_VERSION) {
    const migrate = typeof version === "number" ? MIGRATIONS[version] : undefined;
    if (!migrate) {
      throw new DomainError(
        "internal",
        `task ${taskId} was stored by task machine version ${String(machineVersion)}, which this host (version ${TASK_MACHINE_VERSION}) cannot restore`,
        { taskId, machineVersion, supported: TASK_MACHINE_VERSION },
      );
    }
    current = migrate(current);
    version = (version as number) + 1;
  }
  // `failed` was an XState final state until operators could retry a failed task: a snapshot written then says
  // "done", and a done actor takes no event. It is read as the active state it now is.
  if (current["value"] === "failed" && current["status"] === "done") current = { ...current, status: "active" };
  return current as unknown as Snapshot<unknown> & { context: TaskContext };
}

/** The machine context of a stored snapshot (history, artifacts, interrupt), read through the version check. */
export function persistedContextOf(stored: unknown, taskId?: string): TaskContext {
  return restorePersistedSnapshot(stored, taskId).context;
}
