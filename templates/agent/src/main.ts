import { startAgent } from "./agent.js";

// `npm start`: the agent on PORT (8080 by default). SIGINT (Ctrl-C) and SIGTERM drain it first.
const agent = await startAgent();
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void agent.close().then(() => process.exit(0)));
