// A TCP proxy between one MongoDB client and the server that can stop a client's write command on the way
// (and everything that connection sends after it) until the test lets it go: a deterministic interleaving
// of two real clients on one database, with nothing mocked. It reads the OP_MSG framing only to know each
// message's command name (the first key of its body).
import net from "node:net";

const OP_MSG = 2013;
const WRITES = new Set(["insert", "update", "delete", "bulkWrite", "findAndModify"]);

export interface CommandHoldProxy {
  /** A connection string to the server through the proxy (a direct connection to its first host). */
  uri: string;
  /**
   * Stops the `n`th write command (insert, update, delete, bulkWrite, findAndModify) sent from now on;
   * resolves with its name once it is held.
   */
  holdWrite(n: number): Promise<string>;
  /** Lets the held command (and what its connection queued behind it) through. */
  release(): void;
  /**
   * The next write command `match` accepts reaches the server, which applies it, but its reply (and
   * everything after it on that connection) never reaches the client: a client that dies between the
   * server's commit and learning of it. Resolves once the reply arrived and was kept back.
   */
  swallowReply(match: (write: WriteCommand) => boolean): Promise<WriteCommand>;
  /**
   * The next write command `match` accepts never reaches the server: every connection is cut and new ones are
   * refused (as `refuse()`), so the driver's one retry fails too. Resolves once it happened; `accept()` ends it.
   */
  refuseAt(match: (write: WriteCommand) => boolean): Promise<WriteCommand>;
  /**
   * A stalled store: from now on every command but the handshake and monitoring (`hello`) waits, on every
   * connection, until `resume()` lets them through in order. The server stays reachable, it just never answers.
   */
  stall(): void;
  resume(): void;
  /** A store that is down: every open connection is cut and new ones are refused, until `accept()`. */
  refuse(): void;
  accept(): void;
  close(): Promise<void>;
}

/** What the driver's handshake and server monitoring send: never stalled, so the server stays "up" while stalled. */
const MONITORING = new Set(["hello", "isMaster", "ismaster"]);

/** A write command as the proxy sees it: its name, and the collection when the command names one (`insert: "tasks"`). */
export interface WriteCommand {
  name: string;
  collection?: string;
}

/** The command name of one OP_MSG (body section first), else undefined. */
function commandName(message: Buffer): string | undefined {
  if (message.readInt32LE(12) !== OP_MSG || message[20] !== 0) return undefined;
  const start = 26;
  const end = message.indexOf(0, start);
  return end > start ? message.toString("utf8", start, end) : undefined;
}

/** The write command of one OP_MSG: its name, and its first element's value when that is a string (BSON type 2). */
function writeCommandOf(message: Buffer, name: string): WriteCommand {
  const elementType = message[25];
  const valueAt = 26 + Buffer.byteLength(name) + 1;
  if (elementType !== 0x02) return { name };
  const length = message.readInt32LE(valueAt);
  return { name, collection: message.toString("utf8", valueAt + 4, valueAt + 4 + length - 1) };
}

export async function startCommandHoldProxy(serverUri: string): Promise<CommandHoldProxy> {
  const match = /^mongodb:\/\/(?:([^@/]*)@)?([^/?,]+)[^/?]*(\/[^?]*)?(\?.*)?$/.exec(serverUri);
  if (!match) throw new Error(`the command hold proxy needs a mongodb:// URI (got ${serverUri})`);
  const [, credentials, firstHost, path, query] = match;
  const colon = firstHost!.lastIndexOf(":");
  const target = {
    host: colon > 0 ? firstHost!.slice(0, colon).replace(/^\[|\]$/g, "") : firstHost!,
    port: colon > 0 ? Number(firstHost!.slice(colon + 1)) : 27017,
  };

  let armed: { remaining: number; onHeld: (name: string) => void } | undefined;
  let swallowing: { match: (write: WriteCommand) => boolean; onSwallowed: (write: WriteCommand) => void } | undefined;
  let refusingAt: { match: (write: WriteCommand) => boolean; onRefused: (write: WriteCommand) => void } | undefined;
  let releaseHeld: (() => void) | undefined;
  const sockets = new Set<net.Socket>();
  let stalled = false;
  let refusing = false;
  /** Per connection, lets its stalled commands through. */
  const stalledFlushes = new Set<() => void>();

  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    let held: Buffer[] | undefined;
    /** Set when this connection's next reply is to be kept back; `cut` once it was: nothing more reaches the client. */
    let swallow: { write: WriteCommand; onSwallowed: (write: WriteCommand) => void } | undefined;
    let cut = false;
    const forward = (message: Buffer) => {
      if (held) {
        held.push(message);
        return;
      }
      const name = commandName(message);
      const write = name && WRITES.has(name) ? writeCommandOf(message, name) : undefined;
      if (write && refusingAt?.match(write)) {
        const { onRefused } = refusingAt;
        refusingAt = undefined;
        refusing = true;
        for (const s of sockets) s.destroy();
        onRefused(write);
        return;
      }
      if (write && swallowing?.match(write)) {
        swallow = { write, onSwallowed: swallowing.onSwallowed };
        swallowing = undefined;
      }
      if (stalled && !(name && MONITORING.has(name))) {
        held = [message];
        const flush = () => {
          stalledFlushes.delete(flush);
          const queued = held ?? [];
          held = undefined;
          for (const m of queued) upstream.write(m);
        };
        stalledFlushes.add(flush);
        return;
      }
      if (armed && name && WRITES.has(name) && --armed.remaining === 0) {
        const { onHeld } = armed;
        armed = undefined;
        held = [message];
        releaseHeld = () => {
          const queued = held ?? [];
          held = undefined;
          for (const m of queued) upstream.write(m);
        };
        onHeld(name);
        return;
      }
      upstream.write(message);
    };
    client.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        forward(pending.subarray(0, length));
        pending = pending.subarray(length);
      }
    });
    upstream.on("data", (chunk) => {
      if (swallow) {
        const { write, onSwallowed } = swallow;
        swallow = undefined;
        cut = true;
        onSwallowed(write);
      }
      if (!cut) client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const params = new URLSearchParams(query?.slice(1) ?? "");
  params.delete("replicaSet");
  params.set("directConnection", "true");

  return {
    uri: `mongodb://${credentials ? `${credentials}@` : ""}127.0.0.1:${port}${path ?? "/"}?${params.toString()}`,
    holdWrite: (n) => new Promise<string>((onHeld) => (armed = { remaining: n, onHeld })),
    swallowReply: (match) => new Promise<WriteCommand>((onSwallowed) => (swallowing = { match, onSwallowed })),
    refuseAt: (match) => new Promise<WriteCommand>((onRefused) => (refusingAt = { match, onRefused })),
    release: () => {
      const go = releaseHeld;
      releaseHeld = undefined;
      go?.();
    },
    stall: () => {
      stalled = true;
    },
    resume: () => {
      stalled = false;
      for (const flush of [...stalledFlushes]) flush();
    },
    refuse: () => {
      refusing = true;
      for (const s of sockets) s.destroy();
    },
    accept: () => {
      refusing = false;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
