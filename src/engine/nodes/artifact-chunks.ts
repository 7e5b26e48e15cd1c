import { HandlerError, type ArtifactChunk } from "../../workflows/workflow-types.js";
import { stillRunning, type NodeRuntime } from "./node-executor.js";

/**
 * A task handler's `emitArtifactChunk`: each chunk is one commit (an `output.chunk` event carrying the
 * artifact update), so streams and tasks/get see it before the handler goes on.
 */
export function chunkEmitter(
  runtime: NodeRuntime,
  taskId: string,
  nodeId: string,
): (chunk: ArtifactChunk) => Promise<void> {
  return (chunk) =>
    runtime.repository.withLock(
      taskId,
      async () => {
        if (!stillRunning(await runtime.repository.load(taskId), nodeId)) {
          throw new HandlerError("node_not_running", `node "${nodeId}" no longer runs; the chunk was not recorded`);
        }
        const { artifactId, name, parts, append, lastChunk } = chunk;
        await runtime.repository.commit(taskId, {
          type: "ARTIFACT_CHUNK",
          at: runtime.now(),
          nodeId,
          artifact: { artifactId, ...(name ? { name } : {}), parts },
          append,
          lastChunk,
        });
      },
      { fenced: true },
    ); // the driver's effect writes: refused once another instance took the task's lease
}
