/**
 * Reading settings from the environment. Each module owns a loader for its variables (push, peer, auth,
 * interrupts, store, …) that reads through an EnvReader; the reader collects every problem instead of stopping
 * at the first, so one start reports all of them at once (config/config.ts composes the loaders).
 */

export type Env = Record<string, string | undefined>;

/** Invalid or missing configuration: every problem found, one per line. Messages never echo a secret value. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly problems: readonly string[];

  constructor(problems: string | readonly string[]) {
    const list = typeof problems === "string" ? [problems] : [...problems];
    super(
      list.length === 1 ? list[0]! : `${list.length} configuration problems:\n${list.map((p) => `- ${p}`).join("\n")}`,
    );
    this.problems = list;
  }
}

export class EnvReader {
  readonly problems: string[] = [];

  constructor(readonly env: Env) {}

  /** Runs one loader on `env`; throws one ConfigError naming every problem it found. */
  static load<T>(env: Env, read: (reader: EnvReader) => T): T {
    const reader = new EnvReader(env);
    const value = read(reader);
    reader.throwIfProblems();
    return value;
  }

  throwIfProblems(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }

  problem(message: string): void {
    this.problems.push(message);
  }

  /** The raw value; an empty string counts as unset. */
  raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === "" ? undefined : value;
  }

  int(name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      this.problem(`${name} must be a whole number between ${min} and ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      this.problem(`${name} must be one of ${allowed.join(", ")} (got "${raw}")`);
      return fallback;
    }
    return raw as T;
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    if (raw === "true" || raw === "1") return true;
    if (raw === "false" || raw === "0") return false;
    this.problem(`${name} must be true or false (got "${raw}")`);
    return fallback;
  }

  list(name: string): string[] {
    return (this.env[name] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
  }

  /** A comma-separated list of TCP ports. */
  ports(name: string): number[] {
    const ports: number[] = [];
    for (const entry of this.list(name)) {
      const port = Number(entry);
      if (!Number.isInteger(port) || port < 1 || port > 65535)
        this.problem(`${name} must be a comma-separated list of ports (got "${entry}")`);
      else ports.push(port);
    }
    return ports;
  }

  /** An absolute http(s) URL kept as given (a link, not a base to append paths to); undefined when unset. */
  optionalUrl(name: string): string | undefined {
    const raw = this.raw(name)?.trim();
    if (raw === undefined || raw === "") return undefined;
    try {
      const parsed = new URL(raw);
      if (parsed.protocol === "http:" || parsed.protocol === "https:") return raw;
    } catch {
      // reported below
    }
    this.problem(`${name} must be an absolute http(s) URL (got "${raw}")`);
    return undefined;
  }

  /** An absolute http(s) URL without trailing slashes. */
  url(name: string, fallback: string): string {
    const raw = this.raw(name) ?? fallback;
    try {
      const parsed = new URL(raw);
      if (parsed.protocol === "http:" || parsed.protocol === "https:") return raw.replace(/\/+$/, "");
    } catch {
      // reported below
    }
    this.problem(`${name} must be an absolute http(s) URL (got "${raw}")`);
    return fallback;
  }
}
