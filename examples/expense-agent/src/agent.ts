import { fileURLToPath } from "node:url";
import { startHost, type HostOptions, type RunningHost } from "openwop-a2a-host";
import { handlers } from "./handlers.js";

/** The expense agent: our name on the card, our one skill, our handlers. Everything else from the environment. */
export function startExpenseAgent(options: HostOptions = {}): Promise<RunningHost> {
  return startHost({
    agent: {
      name: "Expense agent",
      description: "Converts an expense to USD, asks a manager to approve it, then files it.",
      provider: { organization: "Example Corp", url: "https://example.com" },
    },
    workflowsDir: fileURLToPath(new URL("../workflows", import.meta.url)),
    handlers,
    ...options,
  });
}
