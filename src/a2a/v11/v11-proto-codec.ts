import type { StreamEvent, Task } from "../../domain/a2a-types.js";
import { invalidParams } from "../../domain/errors.js";
import type * as pb from "../../gen/lf/a2a/v1/draft11/a2a_pb.js";
import type { SendResult } from "../task-service.js";
import type { TaskPage } from "../task-list.js";
import { encodeSendResponse, encodeStreamEvent, encodeTask, encodeTaskPage } from "../v10/v10-proto-codec.js";

/**
 * The A2A 1.1 draft's messages are 1.0's (same package `lf.a2a.v1`, same full names) plus `generation` on
 * Task and on the update events, `currentGeneration` on GetTaskRequest and `ifGenerationMatch` on
 * SendMessageConfiguration. So this codec is the 1.0 codec (`v10-proto-codec.ts`) and adds only those fields:
 * a 1.0 message, with its fields, is a 1.1 message without the new ones.
 */

/** A generation the caller sends (int64): a non-negative safe integer, else invalid params. */
export function decodeGeneration(value: bigint | undefined, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER))
    throw invalidParams(`${path} must be a non-negative integer generation (got ${value})`, { path });
  return Number(value);
}

/** A task written before generations were kept has none: 0 (the proto3 default) on the wire. */
function generationOf(value: number | undefined): bigint {
  return BigInt(value ?? 0);
}

export function encodeTaskV11(task: Task): pb.Task {
  return { ...encodeTask(task), generation: generationOf(task.generation) };
}

export function encodeSendResponseV11(result: SendResult): pb.SendMessageResponse {
  if (result.kind === "message") return encodeSendResponse(result) as pb.SendMessageResponse;
  return { ...encodeSendResponse(result), payload: { case: "task", value: encodeTaskV11(result.task) } };
}

export function encodeStreamEventV11(event: StreamEvent): pb.StreamResponse {
  const response = encodeStreamEvent(event);
  switch (event.kind) {
    case "task":
      return { ...response, payload: { case: "task", value: encodeTaskV11(event.task) } };
    case "message":
      return response as pb.StreamResponse;
    case "status-update":
      return {
        ...response,
        payload: {
          case: "statusUpdate",
          value: {
            ...(response.payload.value as pb.TaskStatusUpdateEvent),
            generation: generationOf(event.generation),
          },
        },
      };
    case "artifact-update":
      return {
        ...response,
        payload: {
          case: "artifactUpdate",
          value: {
            ...(response.payload.value as pb.TaskArtifactUpdateEvent),
            generation: generationOf(event.generation),
          },
        },
      };
  }
}

export function encodeTaskPageV11(
  page: TaskPage,
  unencodable: (task: Task, err: unknown) => void,
): pb.ListTasksResponse {
  const generations = new Map(page.tasks.map((t) => [t.id, t.generation]));
  const response = encodeTaskPage(page, unencodable);
  return { ...response, tasks: response.tasks.map((t) => ({ ...t, generation: generationOf(generations.get(t.id)) })) };
}
