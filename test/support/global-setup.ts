// vitest globalSetup: one MongoDB backend for the whole test run (see ./mongo.ts for how it
// is chosen). Tests read its URI with `inject("mongoUri")`; child processes started by tests
// inherit OPENWOP_TEST_MONGODB_URI.

import type { TestProject } from "vitest/node";
import { redactUri, startTestMongo } from "./mongo.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const mongo = await startTestMongo((line) => console.log(line));
  console.log(`MongoDB backend for this test run: ${mongo.backend} (${redactUri(mongo.uri)})`);
  project.provide("mongoUri", mongo.uri);
  project.provide("mongoBackend", mongo.backend);
  process.env.OPENWOP_TEST_MONGODB_URI = mongo.uri;
  return async () => {
    delete process.env.OPENWOP_TEST_MONGODB_URI;
    await mongo.stop();
  };
}
