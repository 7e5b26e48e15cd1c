// Subscribers that survive the loss of the instance they are attached to: each connection is a segment;
// when one ends before the task did (its instance was killed), the follower attaches again to another live
// instance. Plus the checks of what a follower saw against the task's committed event log.
import type { HostCluster, Incarnation } from "./host-cluster.js";
import { readSse } from "./sse.js";

type Obj = Record<string, any>;

export interface LoggedEvent {
  eventId: string;
  sequence: number;
  type: string;
  nodeId?: string;
  a2a?: { status?: { state: string; timestamp?: string }; artifact?: { artifactId: string } };
}

export interface Segment {
  instanceId: string;
  /** JSON-RPC results (A2A) or run events (OpenWOP), in arrival order. */
  frames: Obj[];
  /** Why the connection ended early, if it did (a killed instance, an error frame). */
  broken?: string;
}

export interface FollowResult {
  kind: "a2a" | "openwop";
  taskId: string;
  segments: Segment[];
  reachedEnd: boolean;
}

const A2A_TERMINAL = new Set(["completed", "failed", "canceled", "rejected"]);
const RUN_TERMINAL = new Set(["run.completed", "run.failed", "run.cancelled"]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Follows a task until its end (or the deadline, which may move), attaching to a live instance other than
 * `avoidSlot` each time.
 */
export async function followTask(
  cluster: HostCluster,
  kind: FollowResult["kind"],
  taskId: string,
  avoidSlot: number,
  deadline: () => number,
): Promise<FollowResult> {
  const result: FollowResult = { kind, taskId, segments: [], reachedEnd: false };
  let lastSequence: number | undefined;
  let turn = avoidSlot + 1;
  while (Date.now() < deadline() && !result.reachedEnd) {
    const on: Incarnation | undefined =
      cluster.live().filter((s) => s.slot !== avoidSlot)[turn++ % 2] ?? cluster.live()[0];
    if (!on) {
      await sleep(100);
      continue;
    }
    const segment: Segment = { instanceId: on.instanceId, frames: [] };
    result.segments.push(segment);
    const abort = AbortSignal.timeout(Math.max(1, deadline() - Date.now()));
    try {
      const res =
        kind === "a2a"
          ? await fetch(`${on.server.baseUrl}/a2a/jsonrpc`, {
              method: "POST",
              signal: abort,
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/resubscribe", params: { id: taskId } }),
            })
          : await fetch(`${on.server.baseUrl}/v1/runs/${taskId}/events`, {
              signal: abort,
              headers: lastSequence === undefined ? {} : { "last-event-id": String(lastSequence) },
            });
      await readSse(res, (frame) => {
        const data = frame.data as Obj;
        if (kind === "a2a") {
          if (data["error"]) segment.broken = `error frame ${JSON.stringify(data["error"])}`;
          else segment.frames.push(data["result"] as Obj);
        } else if (frame.event === "error") {
          segment.broken = `error event ${JSON.stringify(data)}`;
        } else {
          segment.frames.push(data);
          lastSequence = data["sequence"] as number;
        }
      });
    } catch (err) {
      segment.broken = `connection: ${(err as Error).message}`;
    }
    const last = segment.frames.at(-1);
    if (kind === "a2a") {
      const state = last?.["kind"] === "task" ? last["status"]["state"] : last?.["status"]?.["state"];
      result.reachedEnd =
        last !== undefined && A2A_TERMINAL.has(state as string) && (last["kind"] === "task" || last["final"] === true);
    } else {
      result.reachedEnd = last !== undefined && RUN_TERMINAL.has(last["type"] as string);
    }
    if (!result.reachedEnd) await sleep(100);
  }
  return result;
}

/** What an A2A stream frame says, comparable with what the log says. */
function a2aKey(frame: Obj): string {
  return frame["kind"] === "artifact-update"
    ? `artifact:${frame["artifact"]["artifactId"]}`
    : `status:${frame["status"]["state"]}:${frame["status"]["timestamp"]}`;
}

/** The A2A updates the committed log produces, in order (an artifact before the status of the same event). */
function a2aUpdates(log: LoggedEvent[]): string[] {
  const keys: string[] = [];
  for (const e of log) {
    if (e.a2a?.artifact) keys.push(`artifact:${e.a2a.artifact.artifactId}`);
    if (e.a2a?.status) keys.push(`status:${e.a2a.status.state}:${e.a2a.status.timestamp}`);
  }
  return keys;
}

/**
 * Where in the log's updates a segment attached: the index of the last update the Task already reflects.
 * The Task's status timestamp is the head's last write, not its status event's, so the start is found by
 * state: the latest status at or before it has the Task's state, any artifacts after that status are in the
 * Task already, and the frames that followed are exactly the updates after it (none missing, none repeated).
 */
function startOf(task: Obj, got: string[], updates: string[]): number | undefined {
  const state = task["status"]["state"] as string;
  const artifacts = new Set(((task["artifacts"] ?? []) as Obj[]).map((a) => `artifact:${a["artifactId"]}`));
  for (let at = 0; at < updates.length; at++) {
    let status = at;
    while (status >= 0 && !updates[status]!.startsWith("status:")) status--;
    if (status < 0 || updates[status]!.split(":")[1] !== state) continue;
    if (!updates.slice(status + 1, at + 1).every((u) => artifacts.has(u))) continue;
    if (JSON.stringify(updates.slice(at + 1, at + 1 + got.length)) === JSON.stringify(got)) return at;
  }
  return undefined;
}

/**
 * Problems with what a follower saw, against the committed log. A2A: each segment is the Task as of some
 * commit, then exactly the updates after that commit, in order, none missing or repeated (until the
 * segment ended). OpenWOP: the segments together are the whole log, each event once, in order.
 */
export function followProblems(result: FollowResult, log: LoggedEvent[]): string[] {
  const problems: string[] = [];
  const where = `${result.kind} follower of ${result.taskId}`;
  if (!result.reachedEnd)
    problems.push(
      `${where} never saw the end of the task (segments: ${JSON.stringify(result.segments.map((s) => ({ on: s.instanceId, frames: s.frames.length, broken: s.broken })))})`,
    );
  if (result.kind === "openwop") {
    const seen = result.segments.flatMap((s) => s.frames).map((f) => `${f["sequence"]}:${f["eventId"]}`);
    const expected = log.slice(0, seen.length).map((e) => `${e.sequence}:${e.eventId}`);
    if (JSON.stringify(seen) !== JSON.stringify(expected))
      problems.push(`${where} saw ${JSON.stringify(seen)}, the log has ${JSON.stringify(expected)}`);
    if (result.reachedEnd && seen.length !== log.length)
      problems.push(`${where} saw ${seen.length} events, the log has ${log.length}`);
    return problems;
  }
  const updates = a2aUpdates(log);
  for (const [n, segment] of result.segments.entries()) {
    const [first, ...rest] = segment.frames;
    if (!first) continue;
    if (first["kind"] !== "task") {
      problems.push(`${where} segment ${n} began with ${first["kind"]}, not the Task`);
      continue;
    }
    const got = rest.map(a2aKey);
    const at = startOf(first, got, updates);
    if (at === undefined) {
      problems.push(
        `${where} segment ${n} on ${segment.instanceId}: the Task (${first["status"]["state"]}) then ${JSON.stringify(got)} is no stretch of the log's updates ${JSON.stringify(updates)}`,
      );
      continue;
    }
    const final = rest.at(-1);
    if (final?.["final"] === true && at + 1 + got.length !== updates.length)
      problems.push(`${where} segment ${n} ended (final) before the log did`);
  }
  return problems;
}
