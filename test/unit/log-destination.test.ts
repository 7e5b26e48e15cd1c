// Issue 33, item 8: writing logs never blocks the process or its exit when the reader of stdout is gone.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");

const writer = (lines: number) =>
  spawn(process.execPath, ["--import", "tsx", join(root, "test", "fixtures", "log-writer.ts")], {
    cwd: root,
    env: { ...process.env, LINES: String(lines) },
    stdio: ["ignore", "pipe", "pipe"],
  });

describe("the stdout log destination", () => {
  it("with a reader: every line arrives, those logged right before process.exit too", async () => {
    const child = writer(50);
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(0);
    const lines = stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { msg: string; n?: number });
    // Every line, once. (The exit flush cannot wait for a write already under way in the thread pool, so the
    // lines it writes may overtake that one, as with sonic-boom.)
    const got = lines.map((l) => l.n ?? l.msg);
    expect(got).toHaveLength(52);
    expect(new Set(got)).toEqual(new Set([...Array.from({ length: 50 }, (_, i) => i), "last line", "exit line"]));
  });

  it("drops lines once the reader is gone (EPIPE), says so once on stderr, and the process still exits 0", async () => {
    const child = writer(100);
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    // The reader reads the first line, then goes away.
    const first = await new Promise<string>((resolve) =>
      child.stdout.once("data", (d: Buffer) => resolve(d.toString())),
    );
    expect(JSON.parse(first.split("\n")[0]!)).toMatchObject({ msg: "line", n: 0 });
    child.stdout.destroy();
    expect(await exited).toBe(0);
    const notes = stderr.split("\n").filter((l) => l.includes('"log.reader-gone"'));
    expect(notes).toHaveLength(1);
    expect(JSON.parse(notes[0]!)).toMatchObject({ event: "log.reader-gone", code: "EPIPE" });
  });
});
