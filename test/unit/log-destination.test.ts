// Issue 33, item 8: writing logs never blocks the process or its exit when the reader of stdout is gone.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");

describe("the stdout log destination", () => {
  it("drops lines once the reader is gone (EPIPE), says so once on stderr, and the process still exits 0", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(root, "test", "fixtures", "log-writer.ts")], { cwd: root, env: { ...process.env, LINES: "100" }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    // The reader reads the first line, then goes away.
    const first = await new Promise<string>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(d.toString())));
    expect(JSON.parse(first.split("\n")[0]!)).toMatchObject({ msg: "line", n: 0 });
    child.stdout.destroy();
    expect(await exited).toBe(0);
    const notes = stderr.split("\n").filter((l) => l.includes('"log.reader-gone"'));
    expect(notes).toHaveLength(1);
    expect(JSON.parse(notes[0]!)).toMatchObject({ event: "log.reader-gone", code: "EPIPE" });
  });
});
