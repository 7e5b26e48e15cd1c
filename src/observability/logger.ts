import { pino, type Logger } from "pino";

export type { Logger };

/** Structured JSON logs. Secret-bearing fields are redacted wherever they appear. */
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
    destination,
  );
}
