import type { EnvReader } from "../domain/env-settings.js";

/** Where tasks are kept (README "Configuration"). */
export interface StoreSettings {
  store: "auto" | "mongodb" | "memory";
  mongodbUri?: string;
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
  return { store, ...(mongodbUri !== undefined ? { mongodbUri } : {}), mongodbDb: env.raw("MONGODB_DB") ?? "openwop_a2a" };
}
