import { startLlmAgent } from "./agent.js";

// The model's streaming endpoint, e.g. https://models.internal.example/v1/generate (listed in HTTP_NODE_PRIVATE_HOSTS when private).
const modelUrl = process.env["LLM_URL"];
if (!modelUrl) throw new Error("set LLM_URL to the model's streaming endpoint");
const agent = await startLlmAgent({ modelUrl });
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => void agent.close().then(() => process.exit(0)));
