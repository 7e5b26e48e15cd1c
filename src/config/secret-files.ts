import { readFileSync, statSync } from "node:fs";
import type { Env } from "../domain/env-settings.js";

/**
 * The variables that hold a secret. Each is also read from a file named by `<NAME>_FILE` (the Docker and
 * Kubernetes convention: a mounted secret), resolved here into the environment before any settings loader runs,
 * so the loaders read one variable and never learn where it came from.
 *
 * Not here: `A2A_PEERS` (its `A2A_PEERS_FILE` is older and reads YAML too: peer-config.ts) and the `TLS_*_FILE`
 * variables, which are paths by nature (re-read for rotation: transport/tls-files.ts).
 */
export const SECRET_VARIABLES = [
  "API_KEYS",
  "MONGODB_URI",
  "INTERRUPT_TOKEN_KEYS",
  "SIGNING_KEYS",
  "EVIDENCE_SIGNING_KEY",
  "PUSH_ENCRYPTION_KEY",
  "PUSH_ENCRYPTION_KEY_PREVIOUS",
  "PUSH_SIGNING_KEY",
  "A2A_PEER_CALLBACK_KEY",
  "CONSOLE_OIDC_CLIENT_SECRET",
] as const;

export type SecretVariable = (typeof SECRET_VARIABLES)[number];

/**
 * Settings that are not secret but may be long (a mounted ConfigMap): read from `<NAME>_FILE` the same way.
 * TENANT_LIMITS is one JSON document of every tenant's limits.
 */
export const FILE_SETTINGS = ["TENANT_LIMITS"] as const;

/** A mounted secret is small; a larger file is a wrong path (a log, a device), refused before it is read. */
const MAX_SECRET_FILE_BYTES = 1024 * 1024;

export interface SecretFiles {
  /** `env` with every `<NAME>_FILE` read into `<NAME>`. */
  env: Env;
  /** One per variable: both forms set, a file missing, unreadable, too large or empty. Never the file's content. */
  problems: string[];
  /** Each secret read from a file, and the `_FILE` variable that named it (for explaining a loader's problem). */
  fromFile: Map<string, string>;
}

/**
 * Reads the `<NAME>_FILE` of every secret variable set in `env`. The file's content is the value, less its trailing
 * line breaks (`echo … > file` and `kubectl create secret --from-file` keep one; no key ends in one). Setting both
 * `<NAME>` and `<NAME>_FILE` is a problem: which one wins would be a guess.
 */
export function readSecretFiles(
  env: Env,
  names: readonly string[] = [...SECRET_VARIABLES, ...FILE_SETTINGS],
): SecretFiles {
  const resolved: Env = { ...env };
  const problems: string[] = [];
  const fromFile = new Map<string, string>();
  for (const name of names) {
    const fileVariable = `${name}_FILE`;
    const path = env[fileVariable];
    if (path === undefined || path === "") continue;
    if (env[name] !== undefined && env[name] !== "") {
      problems.push(`${name} and ${fileVariable} are both set; set one of them`);
      continue;
    }
    const read = readSecretFile(path);
    if ("problem" in read) {
      problems.push(`${fileVariable}: ${path} ${read.problem}`);
      continue;
    }
    resolved[name] = read.value;
    fromFile.set(name, fileVariable);
  }
  return { env: resolved, problems, fromFile };
}

function readSecretFile(path: string): { value: string } | { problem: string } {
  try {
    const stat = statSync(path);
    if (!stat.isFile()) return { problem: "is not a file" };
    if (stat.size > MAX_SECRET_FILE_BYTES)
      return { problem: `is larger than ${MAX_SECRET_FILE_BYTES} bytes, too large for a secret or a setting` };
    const value = readFileSync(path, "utf8").replace(/[\r\n]+$/, "");
    return value === "" ? { problem: "is empty" } : { value };
  } catch (err) {
    // The code only: a message could carry more than the path, and the path is all the operator needs.
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { problem: "does not exist" };
    if (code === "EACCES" || code === "EPERM") return { problem: "cannot be read (permission denied)" };
    return { problem: `cannot be read (${code ?? "unknown error"})` };
  }
}
