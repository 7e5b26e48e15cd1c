import { readFile } from "node:fs/promises";
import { cliHelp } from "./cli/cli-help.js";
import { initProject, initSummary } from "./cli/init-project.js";
import type { CliCommand } from "./cli/cli-args.js";
import { formatKeys } from "./cli/keys-output.js";
import { startFailure } from "./cli/start-failure.js";
import { generateProductionKeys } from "./config/production-keys.js";
import { packageVersion } from "./domain/package-version.js";
import { createLogger, type Logger } from "./observability/logger.js";
import type { Config } from "./config/config.js";
import type { WorkflowCatalog } from "./engine/workflow-catalog.js";
import type { TaskHandler } from "./workflows/workflow-types.js";

/**
 * The CLI's commands other than starting: help, version, a usage mistake, `check`, `init` and `keys`. Each
 * answers its exit code; none listens or opens the store.
 */
export async function runCommand(command: Exclude<CliCommand, { kind: "start" }>): Promise<number> {
  switch (command.kind) {
    case "help":
      process.stdout.write(cliHelp(packageVersion));
      return 0;
    case "version":
      process.stdout.write(`${packageVersion}\n`);
      return 0;
    case "usage":
      process.stderr.write(`openwop-a2a-host: ${command.problem}\nRun "openwop-a2a-host --help" for the commands.\n`);
      return 2;
    case "check":
      return check();
    case "keys":
      // Only the keys on stdout, so it can go straight to a file or `kubectl apply -f -`.
      process.stdout.write(formatKeys({ ...(await generateProductionKeys()) }, command.format));
      return 0;
    case "evidence-run":
      return evidenceRun(command.options);
    case "evidence-verify": {
      const { verifyCommand } = await import("./cli/evidence-verify.js");
      const verdict = await verifyCommand(command.file, command.discovery);
      (verdict.code === 0 ? process.stdout : process.stderr).write(verdict.text);
      return verdict.code;
    }
    case "init": {
      const result = await initProject(command.dir);
      if (!result.ok) {
        process.stderr.write(`openwop-a2a-host init: ${result.problem}\n`);
        return 2;
      }
      process.stdout.write(initSummary(result, command.dir));
      return 0;
    }
  }
}

/** `check`: what a start reads and checks before it opens the store, all of it, then the verdict (exit 0 or 2). */
async function check(): Promise<number> {
  // Its own lines are the point of the command: at info whatever LOG_LEVEL says.
  const log = createLogger("info");
  try {
    const { settleHost } = await import("./start-host.js");
    const { catalog, handlers, config } = await settleHost({}, process.env, { pickPort: false, logger: log });
    // With MONGODB_URI: the versions live runs use, what this deploy lacks for them, and a version stored otherwise.
    if (config.mongodbUri) await checkStoredVersions(config, catalog, handlers, log);
    const skills = catalog.ids();
    log.info(
      { event: "check.ok", skills, handlers: Object.keys(handlers).sort() },
      `configuration, handlers and workflows are valid: ${skills.length} skill${skills.length === 1 ? "" : "s"} (${skills.join(", ")})`,
    );
    return 0;
  } catch (err) {
    const failure = startFailure(err);
    log.fatal(failure.fields, failure.message);
    return failure.exitCode;
  }
}

/**
 * `check` with MONGODB_URI: opens the store read-only in effect (nothing is written), lists the definition versions
 * live runs use and warns of every node of one that needs what this deploy lacks; a deployed version stored with
 * other content fails the check as it would fail the start. A store that does not answer is a warning: the rest
 * of the check stands.
 */
async function checkStoredVersions(
  config: Config,
  catalog: WorkflowCatalog,
  handlers: Record<string, TaskHandler>,
  log: Logger,
): Promise<void> {
  const { connectMongoStore, redactUri } = await import("./store/open-store.js");
  const { deployContext } = await import("./core.js");
  const { WorkflowVersions } = await import("./engine/workflow-versions.js");
  const { WorkflowLoadError } = await import("./engine/workflow-load-error.js");
  const { reportLiveVersions } = await import("./engine/live-versions-report.js");
  let store;
  try {
    ({ store } = await connectMongoStore(config.mongodbUri!, config.mongodbDb, config.taskStore));
  } catch (err) {
    // A check run where the database is not reachable (a build step, a laptop) still checks everything else.
    log.warn(
      { event: "check.store-unreachable", reason: (err as Error).message.split("\n")[0] },
      `the stored workflow versions were not checked: the store at ${redactUri(config.mongodbUri!)} did not answer`,
    );
    return;
  }
  try {
    const versions = new WorkflowVersions({
      catalog,
      store: store.workflowVersions,
      deploy: deployContext(config, handlers),
    });
    const conflicts = await versions.conflicts();
    if (conflicts.length > 0) throw new WorkflowLoadError(conflicts);
    await reportLiveVersions(versions, log);
  } finally {
    await store.close();
  }
}

/** `evidence run`: the witness (cli/evidence-run.ts); the bundle's path and the rung on stdout, exit 0, or 1 with why. */
async function evidenceRun(options: Record<string, string>): Promise<number> {
  const { runEvidence } = await import("./cli/evidence-run.js");
  const out = options["--out"] ?? "evidence-bundle.json";
  try {
    const apiKeyFile = options["--api-key-file"];
    const bundle = await runEvidence({
      out,
      ...(options["--instances"] ? { instances: Number(options["--instances"]) } : {}),
      ...(options["--build"] ? { build: options["--build"] } : {}),
      ...(options["--accept-skill"] ? { acceptSkill: options["--accept-skill"] } : {}),
      ...(options["--discovery-url"] ? { discoveryUrl: options["--discovery-url"] } : {}),
      ...(apiKeyFile ? { apiKey: (await readFile(apiKeyFile, "utf8")).trim() } : {}),
    });
    const t = bundle.results.totals;
    process.stdout.write(
      `${out}: ${t.executedPass} passed, ${t.executedFail} failed, ${t.skipped} skipped, ${t.blocked} blocked; rung ${bundle.durability?.rung ?? "none"}; signed by ${bundle.signature?.keyId}\n`,
    );
    return t.executedFail > 0 || t.blocked > 0 ? 1 : 0;
  } catch (err) {
    process.stderr.write(`openwop-a2a-host evidence run: ${(err as Error).message}\n`);
    return 1;
  }
}
