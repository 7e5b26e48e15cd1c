import { inspect } from "node:util";

/**
 * A secret from configuration (a key). It never prints: JSON, string conversion and `util.inspect` (which
 * pino and console use) all show "[redacted]"; only `reveal()` gives the value.
 */
export class SecretValue<T> {
  readonly #value: T;

  constructor(value: T) {
    this.#value = value;
  }

  reveal(): T {
    return this.#value;
  }

  toJSON(): string {
    return "[redacted]";
  }

  toString(): string {
    return "[redacted]";
  }

  [inspect.custom](): string {
    return "[redacted]";
  }
}
