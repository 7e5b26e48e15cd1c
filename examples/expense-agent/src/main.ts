import { startExpenseAgent } from "./agent.js";

const agent = await startExpenseAgent();
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.once(signal, () => void agent.close().then(() => process.exit(0)));
