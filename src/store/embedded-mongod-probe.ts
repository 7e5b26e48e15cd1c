import { lookup } from "node:dns/promises";

const DEFAULT_MIRROR = "https://fastdl.mongodb.org";
const LOOKUP_TIMEOUT_MS = 2_000;

/**
 * Why the embedded mongod cannot start, or undefined when it may: a binary is already there (cache,
 * system, MONGOMS_SYSTEM_BINARY), or the download host resolves. A failed name lookup is final, so an
 * offline start falls back at once instead of retrying a download for seconds.
 */
export async function embeddedMongodUnavailable(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const { DryMongoBinary } = await import("mongodb-memory-server-core");
  if (await DryMongoBinary.locateBinary(await DryMongoBinary.generateOptions())) return undefined;
  const source = env["MONGOMS_DOWNLOAD_URL"] || env["MONGOMS_DOWNLOAD_MIRROR"] || DEFAULT_MIRROR;
  let host: string;
  try {
    host = new URL(source).hostname;
  } catch {
    return `no mongod binary, and the download source "${source}" is not a URL`;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      lookup(host),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${LOOKUP_TIMEOUT_MS} ms`)), LOOKUP_TIMEOUT_MS);
      }),
    ]);
    return undefined;
  } catch (err) {
    return `no mongod binary, and its download host ${host} cannot be resolved (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): offline?`;
  } finally {
    clearTimeout(timer);
  }
}
