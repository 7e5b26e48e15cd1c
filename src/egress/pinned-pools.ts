import { Pool } from "undici";
import type { ResolvedAddress } from "./egress-guard.js";
import { pinnedLookup } from "./pinned-connection.js";

/**
 * The connection part of the egress HTTP client (egress-http-client.ts): undici pools keyed
 * by origin + the addresses the egress guard checked, so a connection is only ever reused for exactly what a
 * request validated, and whose socket `lookup` answers only with those addresses (the name is never resolved
 * a second time between check and connect). The URL's name stays the Host header and the TLS servername.
 */
export interface PinnedPool {
  readonly pool: Pool;
}

/** A client certificate (mTLS) for the connections of a pool, PEM; `id` keys the pool so no other caller shares it. */
export interface ClientTls {
  id: string;
  cert: string;
  key: string;
  /** Trusted CAs for the server's certificate, instead of the default ones. */
  ca?: string;
}

export interface PinnedPools {
  /** A pool for the checked URL and addresses (and client certificate, if any); give it back with `release`. */
  acquire(url: URL, addresses: readonly ResolvedAddress[], tls?: ClientTls): PinnedPool;
  /** `failed`: the request failed at the connection level, so the pool is dropped once nobody uses it. */
  release(entry: PinnedPool, failed: boolean): void;
  /** Drops every connection. */
  destroyAll(): Promise<void>;
}

export interface PinnedPoolsOptions {
  /** How many (origin, addresses) pools are kept for reuse (least recently used go first). */
  maxPools: number;
  connectionsPerPool: number;
  keepAliveMs: number;
  /** Happy eyeballs across the checked addresses. */
  autoSelectFamily?: boolean;
  /** Trusted CAs (PEM) for every pool whose client certificate names none, instead of Node's default ones. */
  ca?: string;
}

interface Entry extends PinnedPool {
  key: string;
  /** Requests currently using this pool. */
  users: number;
  /** Evicted (LRU or after a failure): destroyed once the last user is done. */
  retired: boolean;
}

export function createPinnedPools(opts: PinnedPoolsOptions): PinnedPools {
  // Map insertion order doubles as LRU order.
  const pools = new Map<string, Entry>();

  function retire(entry: Entry): void {
    if (pools.get(entry.key) === entry) pools.delete(entry.key);
    entry.retired = true;
    // destroy(), not close(): close() can wait forever on a pool whose connection failed
    // (seen with undici 7.30 after ERR_TLS_CERT_ALTNAME_INVALID). Nobody is using it any more.
    if (entry.users === 0) void entry.pool.destroy().catch(ignore);
  }

  return {
    acquire(url, addresses, tls) {
      const key = `${url.origin}|${addresses.map((a) => a.address).join(",")}${tls ? `|tls:${tls.id}` : ""}`;
      let entry = pools.get(key);
      if (entry !== undefined && !entry.pool.closed && !entry.pool.destroyed) {
        pools.delete(key);
        pools.set(key, entry);
      } else {
        const hostname = url.hostname.endsWith(".") ? url.hostname.slice(0, -1) : url.hostname;
        const isName = !hostname.startsWith("[") && !/^[0-9.]+$/.test(hostname);
        const pool = new Pool(url.origin, {
          connections: opts.connectionsPerPool,
          connect: {
            lookup: pinnedLookup(addresses),
            // SNI and certificate checks use the URL's name (without a trailing dot), never the IP.
            ...(url.protocol === "https:" && isName ? { servername: hostname } : {}),
            ...(tls ? { cert: tls.cert, key: tls.key } : {}),
            ...((tls?.ca ?? opts.ca) !== undefined ? { ca: tls?.ca ?? opts.ca } : {}),
          },
          ...(opts.autoSelectFamily ? { autoSelectFamily: true } : {}),
          keepAliveTimeout: opts.keepAliveMs,
          keepAliveMaxTimeout: opts.keepAliveMs,
          pipelining: 1,
        });
        entry = { key, pool, users: 0, retired: false };
        pools.set(key, entry);
        for (const old of pools.values()) {
          if (pools.size <= opts.maxPools) break;
          retire(old);
        }
      }
      entry.users += 1;
      return entry;
    },

    release(pinned, failed) {
      const entry = pinned as Entry;
      entry.users -= 1;
      if (failed || entry.retired) retire(entry);
    },

    async destroyAll() {
      const entries = [...pools.values()];
      pools.clear();
      await Promise.all(entries.map((e) => e.pool.destroy().catch(ignore)));
    },
  };
}

function ignore(): void {}
