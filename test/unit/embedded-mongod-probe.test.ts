import { DryMongoBinary } from "mongodb-memory-server-core";
import { describe, expect, it } from "vitest";
import { embeddedMongodUnavailable } from "../../src/store/embedded-mongod-probe.js";

describe("embedded mongod probe", () => {
  it("without a local binary, a download host that does not resolve is final: the reason names the host", async () => {
    const binary = await DryMongoBinary.locateBinary(await DryMongoBinary.generateOptions());
    const reason = await embeddedMongodUnavailable({
      MONGOMS_DOWNLOAD_URL: "https://mongod-download.invalid/mongodb.tgz",
    });
    if (binary) expect(reason).toBeUndefined();
    else expect(reason).toMatch(/download host mongod-download\.invalid cannot be resolved \((ENOTFOUND|EAI_AGAIN)\)/);
  });

  it("a download source that is not a URL is reported as such", async () => {
    const binary = await DryMongoBinary.locateBinary(await DryMongoBinary.generateOptions());
    const reason = await embeddedMongodUnavailable({ MONGOMS_DOWNLOAD_MIRROR: "not a url" });
    if (binary) expect(reason).toBeUndefined();
    else expect(reason).toMatch(/"not a url" is not a URL/);
  });
});
