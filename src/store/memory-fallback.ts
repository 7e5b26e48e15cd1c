/**
 * What the host says when STORE=auto finds no MongoDB and falls back to the in-memory store: loudly, because
 * every task is then lost when the process stops. The same text goes to the log at start (one warn record per
 * line, so it reads as a block in any log view) and to `/readyz` (`details.warning`); README and docs/package.md
 * show the same one-command local store (test/docs checks they match these constants).
 */

/** One command for a local durable store: MongoDB 8 as a one-node replica set (its health check initiates it). */
export const LOCAL_MONGO_COMMAND =
  `docker run -d --name openwop-mongo -p 127.0.0.1:27017:27017 -v openwop-mongo:/data/db --health-interval 2s ` +
  `--health-cmd 'mongosh --quiet --eval "try { rs.status() } catch (e) { rs.initiate({ _id: \\"rs0\\", members: [{ _id: 0, host: \\"127.0.0.1:27017\\" }] }) }"' ` +
  `mongo:8.0 --replSet rs0 --bind_ip_all`;

/** Where that store answers. */
export const LOCAL_MONGO_URI = "mongodb://127.0.0.1:27017/openwop_a2a?replicaSet=rs0";

/** The start-up line's store phrase when the host fell back. */
export const FALLBACK_DESCRIPTION =
  "in-memory store, not durable: every task is lost when the process stops (no MongoDB was found; see the NOT DURABLE warning above)";

/** The warning, line by line; `reason` is why no MongoDB could be used (first line of the error). */
export function memoryFallbackWarning(reason: string): string[] {
  return [
    "NOT DURABLE: no MongoDB available, so this host runs on the IN-MEMORY store.",
    "NOT DURABLE: every task, push config and idempotency record is lost when the process stops.",
    `NOT DURABLE: why: ${reason}`,
    "NOT DURABLE: for a local durable store, run (one command, Docker):",
    `NOT DURABLE:   ${LOCAL_MONGO_COMMAND}`,
    `NOT DURABLE: then start the host with MONGODB_URI=${LOCAL_MONGO_URI}`,
    "NOT DURABLE: (or let the embedded mongod download once; or set STORE=memory to choose this store on purpose).",
  ];
}
