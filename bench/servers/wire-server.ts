// The wire-protocol test server (test/support/mongo-wire-server/) as a bench child: its own process (its CPU
// is not our server's), and it ends with the bench, like every other child. It counts the commands its
// clients send (`commands` over IPC: "bulkWrite", "find tasks", "getMore tasks"...), so a server whose CPU is
// measured needs no driver command monitoring of its own; the driver's monitoring (hello, its heartbeat) is
// left out.
import { startMongoWireServer } from "../../test/support/mongo-wire-server/server.js";
import { serveIpc } from "../lib/ipc.js";

const MONITORING = new Set(["hello", "isMaster", "ismaster", "ping", "endSessions"]);
const commands = new Map<string, number>();

const server = await startMongoWireServer({
  port: 0,
  onCommand: (body) => {
    const name = Object.keys(body)[0] ?? "";
    if (MONITORING.has(name)) return;
    // The collection the command names (getMore names it apart); a client bulkWrite names none.
    const target = name === "getMore" ? body["collection"] : body[name];
    const key = typeof target === "string" ? `${name} ${target}` : name;
    commands.set(key, (commands.get(key) ?? 0) + 1);
  },
});
serveIpc({ commands: () => Object.fromEntries(commands) }, { uri: server.uri });
process.on("SIGTERM", () => void server.close().finally(() => process.exit(0)));
