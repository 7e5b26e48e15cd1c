import { fileURLToPath } from "node:url";
import { startHost, type HostOptions, type RunningHost } from "openwop-a2a-host";
import { llmNodeKind } from "./llm-node.js";

/** The answering agent: its own `llm` node kind, one skill. Everything else from the environment. */
export function startLlmAgent(options: HostOptions & { modelUrl: string }): Promise<RunningHost> {
  const { modelUrl, ...host } = options;
  return startHost({
    agent: { name: "Answering agent", description: "Answers questions, streaming the model's words as they come." },
    workflowsDir: fileURLToPath(new URL("../workflows", import.meta.url)),
    nodeKinds: [llmNodeKind({ modelUrl })],
    ...host,
  });
}
