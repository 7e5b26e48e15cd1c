// Standalone mode: `npm run mongo:test-server -- --port 27999 [--host 127.0.0.1]
// [--ttl-monitor-interval-ms 1000]`. Runs until SIGINT / SIGTERM.

import { parseArgs } from "node:util";
import { startMongoWireServer } from "./server.js";

function numberOption(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name} must be a non-negative integer, got '${value}'`);
    process.exit(2);
  }
  return n;
}

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "27017" },
    host: { type: "string", default: "127.0.0.1" },
    "ttl-monitor-interval-ms": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});

if (values.help) {
  console.log("usage: mongo:test-server [--port N] [--host H] [--ttl-monitor-interval-ms MS]");
  process.exit(0);
}

const server = await startMongoWireServer({
  port: numberOption(values.port, "port", 27017),
  host: values.host,
  ttlMonitorIntervalMs: numberOption(values["ttl-monitor-interval-ms"], "ttl-monitor-interval-ms", 1000),
});
console.log(`mongo wire-protocol test server listening on ${server.uri}`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void server.close().then(() => process.exit(0));
  });
}
