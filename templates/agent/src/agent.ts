import { fileURLToPath } from "node:url";
import { startHost, type HostOptions, type RunningHost } from "openwop-a2a-host";
import { handlers } from "./handlers.js";

/**
 * This agent: its name on the agent card, one skill per workflow in workflows/, the handlers of handlers.ts.
 * Everything else (PORT, MONGODB_URI, API_KEYS, ...) comes from the environment or from `options`.
 */
export function startAgent(options: HostOptions = {}): Promise<RunningHost> {
  return startHost({
    agent: { name: "{{name}}", description: "Drafts a text, then waits for a person to approve it." },
    workflowsDir: fileURLToPath(new URL("../workflows", import.meta.url)),
    handlers,
    ...options,
  });
}
