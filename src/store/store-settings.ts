import type { EnvReader } from "../domain/env-settings.js";

/** Where tasks are kept (README "Configuration"). */
export interface StoreSettings {
  store: "auto" | "mongodb" | "memory";
  mongodbUri?: string;
  /** MONGODB_DB when set, else the database named in MONGODB_URI's path, else `openwop_a2a`. */
  mongodbDb: string;
}

/** STORE, MONGODB_URI and MONGODB_DB; production runs on MongoDB only. */
export function readStoreSettings(env: EnvReader, production: boolean): StoreSettings {
  const mongodbUri = env.raw("MONGODB_URI");
  if (mongodbUri !== undefined && !/^mongodb(\+srv)?:\/\//.test(mongodbUri)) env.problem("MONGODB_URI must start with mongodb:// or mongodb+srv://");
  const store = env.oneOf("STORE", ["auto", "mongodb", "memory"] as const, "auto");
  if (store === "mongodb" && mongodbUri === undefined) env.problem("STORE=mongodb needs MONGODB_URI");
  if (production) {
    if (mongodbUri === undefined) env.problem("NODE_ENV=production needs MONGODB_URI: production never runs on the embedded or in-memory store");
    if (store === "memory") env.problem("NODE_ENV=production does not allow STORE=memory");
  }
  const mongodbDb = env.raw("MONGODB_DB") || (mongodbUri !== undefined ? databaseInUri(mongodbUri) : undefined) || DEFAULT_DATABASE;
  return { store, ...(mongodbUri !== undefined ? { mongodbUri } : {}), mongodbDb };
}

const DEFAULT_DATABASE = "openwop_a2a";

/** The database a connection string names in its path (`mongodb://host/prod?...` names `prod`), if any. */
export function databaseInUri(uri: string): string | undefined {
  const rest = uri.replace(/^mongodb(\+srv)?:\/\//, "");
  // Credentials and hosts hold no unescaped "/", so the first one starts the path.
  const slash = rest.indexOf("/");
  if (slash < 0) return undefined;
  const path = rest.slice(slash + 1).split("?")[0] ?? "";
  try {
    return decodeURIComponent(path) || undefined;
  } catch {
    return path || undefined;
  }
}
