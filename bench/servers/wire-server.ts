// The wire-protocol test server (test/support/mongo-wire-server/) as a bench child: its own process (its CPU
// is not our server's), and it ends with the bench, like every other child.
import { startMongoWireServer } from "../../test/support/mongo-wire-server/server.js";
import { serveIpc } from "../lib/ipc.js";

const server = await startMongoWireServer({ port: 0 });
serveIpc({}, { uri: server.uri });
process.on("SIGTERM", () => void server.close().finally(() => process.exit(0)));
