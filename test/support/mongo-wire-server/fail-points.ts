// Fail points, as mongod's `configureFailPoint` command sets them (only with
// --setParameter enableTestCommands=1 on mongod; always here). Two are implemented, those the
// drivers' own spec tests use:
//
//   failCommand: before a command named in `data.failCommands` runs, optionally wait
//     (`blockConnection` + `blockTimeMS`), then close the connection without a reply
//     (`closeConnection`) or answer an error (`errorCode`, with `errorLabels` when given, else the
//     labels mongod would attach), or run the command and add a `writeConcernError` to its reply.
//     `appName` limits it to the connections whose handshake named that application, `namespace`
//     ("db.collection") to the commands on that collection.
//   onPrimaryTransactionalWrite: after a retryable write (one with `txnNumber`) has been applied,
//     close the connection instead of replying (`data.closeConnection`, default true), so the
//     client's retry must be answered from the session's record and not applied twice.
//
// Modes: "alwaysOn", "off", {times: n} (the next n matching commands), {skip: n} (all but the next n),
// {activationProbability: p}. `configureFailPoint` answers `count`, how many times the fail point has
// fired so far; `waitForFailPoint` (with `timesEntered` and `maxTimeMS`) waits until it has fired that often.

import { integerValue, isDocument, isNumeric, toDouble, type Doc } from "./bson-values.js";
import { ErrorCode, fail } from "./errors.js";

type Mode =
  | { kind: "off" }
  | { kind: "alwaysOn" }
  | { kind: "times"; remaining: number }
  | { kind: "skip"; remaining: number }
  | { kind: "probability"; p: number };

interface FailPoint {
  mode: Mode;
  data: Doc;
}

/** What a matching failCommand tells the server to do with one command. */
export interface CommandFault {
  blockTimeMs?: number;
  closeConnection?: boolean;
  error?: { code: number; labels?: string[] };
  writeConcernError?: Doc;
}

const SUPPORTED = new Set(["failCommand", "onPrimaryTransactionalWrite"]);
/** mongod never fails these through failCommand (they would make the fail point impossible to turn off). */
const NEVER_FAILED = new Set(["configureFailPoint"]);

export class FailPoints {
  private readonly points = new Map<string, FailPoint>();
  /** How many times each fail point has fired since the server started (mongod's `timesEntered`). */
  private readonly entered = new Map<string, number>();

  timesEntered(name: string): number {
    return this.entered.get(name) ?? 0;
  }

  /** configureFailPoint: returns the reply (`count`: the fail point's timesEntered so far, as mongod answers). */
  configure(command: Doc): Doc {
    const name = command.configureFailPoint;
    if (typeof name !== "string") fail(ErrorCode.TypeMismatch, "configureFailPoint must be a string");
    if (!SUPPORTED.has(name))
      fail(
        ErrorCode.BadValue,
        `Cannot find failPoint named ${name} (the wire-protocol test server implements ${[...SUPPORTED].join(", ")})`,
      );
    const mode = parseMode(command.mode);
    const data = command.data === undefined ? {} : command.data;
    if (!isDocument(data)) fail(ErrorCode.TypeMismatch, "the 'data' option of configureFailPoint must be an object");
    if (name === "failCommand" && mode.kind !== "off") {
      const commands = data.failCommands;
      if (!Array.isArray(commands) || !commands.every((c) => typeof c === "string"))
        fail(ErrorCode.BadValue, "failCommand requires data.failCommands: an array of command names");
    }
    if (mode.kind === "off") this.points.delete(name);
    else this.points.set(name, { mode, data });
    return { count: this.timesEntered(name), ok: 1 };
  }

  /** The failCommand fault for this command, if the fail point is on, names it, and fires now. */
  commandFault(command: Doc, db: string, appName: string | undefined): CommandFault | undefined {
    const commandName = Object.keys(command)[0] ?? "";
    const point = this.points.get("failCommand");
    if (!point || NEVER_FAILED.has(commandName)) return undefined;
    const { data } = point;
    if (!(data.failCommands as string[]).includes(commandName)) return undefined;
    if (typeof data.appName === "string" && data.appName !== appName) return undefined;
    if (typeof data.namespace === "string" && data.namespace !== `${db}.${String(command[commandName])}`)
      return undefined;
    if (!this.fire("failCommand", point)) return undefined;
    const fault: CommandFault = {};
    if (data.blockConnection === true)
      fault.blockTimeMs = isNumeric(data.blockTimeMS) ? Math.max(0, toDouble(data.blockTimeMS)) : 0;
    if (data.closeConnection === true) fault.closeConnection = true;
    if (isNumeric(data.errorCode)) {
      const code = integerValue(data.errorCode) ?? Math.trunc(toDouble(data.errorCode));
      fault.error = {
        code,
        ...(Array.isArray(data.errorLabels)
          ? { labels: data.errorLabels.filter((l): l is string => typeof l === "string") }
          : {}),
      };
    }
    if (isDocument(data.writeConcernError)) fault.writeConcernError = data.writeConcernError;
    return fault;
  }

  /** onPrimaryTransactionalWrite: whether to drop the connection after this retryable write was applied. */
  closeAfterRetryableWrite(): boolean {
    const point = this.points.get("onPrimaryTransactionalWrite");
    if (!point || !this.fire("onPrimaryTransactionalWrite", point)) return false;
    return point.data.closeConnection !== false;
  }

  /** waitForFailPoint: resolves once the fail point has fired `timesEntered` times in all, or fails after maxTimeMS. */
  async waitFor(command: Doc): Promise<Doc> {
    const name = command.waitForFailPoint;
    if (typeof name !== "string" || !SUPPORTED.has(name))
      fail(ErrorCode.BadValue, `Cannot find failPoint named ${String(name)}`);
    if (!isNumeric(command.timesEntered)) fail(ErrorCode.BadValue, "waitForFailPoint requires timesEntered");
    if (!isNumeric(command.maxTimeMS)) fail(ErrorCode.BadValue, "waitForFailPoint requires maxTimeMS");
    const target = toDouble(command.timesEntered);
    const deadline = Date.now() + toDouble(command.maxTimeMS);
    while (this.timesEntered(name) < target) {
      if (Date.now() >= deadline) fail(ErrorCode.MaxTimeMSExpired, "operation exceeded time limit");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { ok: 1 };
  }

  clear(): void {
    this.points.clear();
  }

  private fire(name: string, point: FailPoint): boolean {
    const { mode } = point;
    let fires: boolean;
    switch (mode.kind) {
      case "alwaysOn":
        fires = true;
        break;
      case "times":
        fires = mode.remaining > 0;
        if (fires) mode.remaining--;
        if (mode.remaining <= 0) this.points.delete(name);
        break;
      case "skip":
        fires = mode.remaining <= 0;
        if (!fires) mode.remaining--;
        break;
      case "probability":
        fires = Math.random() < mode.p;
        break;
      default:
        fires = false;
    }
    if (fires) this.entered.set(name, this.timesEntered(name) + 1);
    return fires;
  }
}

function parseMode(mode: unknown): Mode {
  if (mode === "off") return { kind: "off" };
  if (mode === "alwaysOn") return { kind: "alwaysOn" };
  if (isDocument(mode)) {
    if (isNumeric(mode.times)) {
      const n = Math.trunc(toDouble(mode.times));
      if (n < 0) fail(ErrorCode.BadValue, "'times' option to 'mode' must be positive");
      return n === 0 ? { kind: "off" } : { kind: "times", remaining: n };
    }
    if (isNumeric(mode.skip)) return { kind: "skip", remaining: Math.max(0, Math.trunc(toDouble(mode.skip))) };
    if (isNumeric(mode.activationProbability)) {
      const p = toDouble(mode.activationProbability);
      if (!(p >= 0 && p <= 1)) fail(ErrorCode.BadValue, "activationProbability must be between 0.0 and 1.0");
      return { kind: "probability", p };
    }
  }
  return fail(
    ErrorCode.TypeMismatch,
    "'mode' must be one of 'off', 'alwaysOn', {times: n}, {skip: n} or {activationProbability: p}",
  );
}
