import { describe, expect, it } from "vitest";
import { LOCAL_MONGO_COMMAND, LOCAL_MONGO_URI } from "../../src/store/memory-fallback.js";
import { readRepoFile, section } from "./markdown.js";

/** The one-command local durable store: README and docs/package.md show exactly what the fallback warning says. */
describe("a local durable store in one command", () => {
  for (const file of ["README.md", "docs/package.md"]) {
    it(`${file} shows the command and the MONGODB_URI the NOT DURABLE warning names`, () => {
      const text = section(readRepoFile(file), "A local durable store");
      expect(text, `no "A local durable store" section in ${file}`).toBeDefined();
      const block = /```sh\n([\s\S]*?)```/.exec(text!)?.[1] ?? "";
      const lines = block.split("\n").filter(Boolean);
      expect(lines[0]).toBe(LOCAL_MONGO_COMMAND);
      expect(lines[1]).toBe(`MONGODB_URI='${LOCAL_MONGO_URI}' npm start`);
    });
  }

  it("is one docker run of a one-node replica set that the host reaches as a replica set client", () => {
    expect(LOCAL_MONGO_COMMAND).toMatch(/^docker run -d .* mongo:8\.0 --replSet rs0 --bind_ip_all$/);
    expect(LOCAL_MONGO_COMMAND).toContain(`host: \\"127.0.0.1:27017\\"`);
    expect(LOCAL_MONGO_COMMAND).toContain("-p 127.0.0.1:27017:27017");
    expect(new URL(LOCAL_MONGO_URI).searchParams.get("replicaSet")).toBe("rs0");
  });
});
