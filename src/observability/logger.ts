import { pino, type Logger } from "pino";
import { stdoutDestination } from "./log-destination.js";

export type { Logger };

/**
 * Structured JSON logs. Secret-bearing fields are redacted wherever they appear. By default to stdout through
 * `LogDestination`: asynchronous, and a log reader that goes away never blocks the process or its exit.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "openwop-a2a-host" },
      redact: {
        paths: ["token", "*.token", "credentials", "*.credentials", "authorization", "*.authorization", "*.headers.authorization", "apiKey", "*.apiKey"],
        censor: "[redacted]",
      },
    },
    destination ?? stdoutDestination(),
  );
}
