import { pino, type Logger } from "pino";
import { stdoutDestination } from "./log-destination.js";
import { readableDestination } from "./readable-log.js";

export type { Logger };

/**
 * Structured JSON logs. Secret-bearing fields are redacted wherever they appear. Without a destination: stdout,
 * as JSON lines, or as readable lines when stdout is a terminal (a person, not a log pipeline, is reading);
 * either way through `LogDestination`: asynchronous, and a reader that goes away never blocks the process or its exit.
 */
export function createLogger(
  level: string,
  destination: pino.DestinationStream | undefined = process.stdout.isTTY
    ? readableDestination(stdoutDestination())
    : stdoutDestination(),
): Logger {
  return pino(
    {
      level,
      base: { service: "openwop-a2a-host" },
      redact: {
        paths: [
          "token",
          "*.token",
          "credentials",
          "*.credentials",
          "authorization",
          "*.authorization",
          "*.headers.authorization",
          "apiKey",
          "*.apiKey",
        ],
        censor: "[redacted]",
      },
    },
    destination,
  );
}
