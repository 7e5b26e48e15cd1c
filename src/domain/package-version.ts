import { readFileSync } from "node:fs";
import { join } from "node:path";
import { projectRoot } from "./project-root.js";

/** This package's version (package.json): on the agent cards, in the telemetry, and `openwop-a2a-host --version`. */
export const packageVersion = (
  JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as { version: string }
).version;
