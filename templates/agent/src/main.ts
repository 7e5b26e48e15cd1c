import { reportStartFailure } from "openwop-a2a-host";
import { startAgent } from "./agent.js";

// `npm start`: the agent on PORT (8080 by default). SIGINT (Ctrl-C) and SIGTERM drain it first. A start that fails
// prints the same line as the CLI (every configuration or workflow problem, no stack trace) and exits 2 (or 1).
const agent = await startAgent().catch((err: unknown) => process.exit(reportStartFailure(err)));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void agent.close().then(() => process.exit(0)));
