import { defineConfig } from "vitest/config";

/** Every project starts the test MongoDB once (test/support/global-setup.ts) and runs tests in forks. */
const shared = {
  globalSetup: ["test/support/global-setup.ts"],
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: "forks" as const,
};

// `npm test` runs every project; `npm run test:unit`, `test:integration` and `test:browser` run one.
export default defineConfig({
  test: {
    projects: [
      { test: { ...shared, name: "unit", include: ["test/unit/**/*.test.ts", "test/docs/**/*.test.ts"] } },
      { test: { ...shared, name: "integration", include: ["test/{integration,service,store,durability,package,support}/**/*.test.ts", "examples/*/test/**/*.test.ts"] } },
      { test: { ...shared, name: "browser", include: ["test/browser/**/*.test.ts"] } },
    ],
  },
});
