import { existsSync } from "node:fs";

/** The command that installs the browser the console tests drive (CI runs it in .ci/run). */
export const CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium";

/** Debian's chromium (or CHROMIUM_PATH); undefined when none is installed. */
export function findChromium(): string | undefined {
  const candidates = [
    process.env["CHROMIUM_PATH"],
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
  ];
  return candidates.find((path): path is string => !!path && existsSync(path));
}
