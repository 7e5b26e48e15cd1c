import { randomBytes } from "node:crypto";
import { chmod, link, mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * The text of a secret file under DATA_DIR, created once with `create()` when it does not exist yet (dev
 * keys). The content is written to a private temp file and linked into place, so the file appears complete
 * or not at all, and when several processes start at once exactly one of them wins (the others read it).
 */
export async function readOrCreateSecretFile(path: string, create: () => string): Promise<string> {
  const existing = await readSecretFile(path);
  if (existing !== undefined) return existing;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(temp, create(), { mode: 0o600, flag: "wx" });
  try {
    await link(temp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  const stored = await readSecretFile(path);
  if (stored === undefined) throw new Error(`${path} could not be read back after it was written`);
  return stored;
}

async function readSecretFile(path: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  // Tighten permissions a copy or an editor may have loosened; the file holds a secret.
  await chmod(path, 0o600).catch(() => undefined);
  return text;
}
