import type { RunEvent } from "../domain/task-record.js";

export interface ArtifactRef {
  artifactId: string;
  name?: string;
}

/** Artifact references (id, name) created up to and including `sequence`, the latest name winning. */
export function artifactRefsUpTo(events: RunEvent[], sequence: number): ArtifactRef[] {
  const refs = new Map<string, ArtifactRef>();
  for (const event of events) {
    if (event.sequence > sequence) break;
    const artifact = event.a2a?.artifact;
    if (!artifact) continue;
    // A streamed chunk may leave the name out: the artifact keeps the one it had.
    const name = artifact.name ?? refs.get(artifact.artifactId)?.name;
    refs.set(artifact.artifactId, { artifactId: artifact.artifactId, ...(name ? { name } : {}) });
  }
  return [...refs.values()];
}
