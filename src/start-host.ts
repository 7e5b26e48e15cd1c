import { createServer, type AddressInfo } from "node:net";
import { createApp } from "./app.js";
import { consoleAccessDescription } from "./console/console-access.js";
import { ConfigError, loadConfig, type Config } from "./config/config.js";
import { checkVariableNames, type NearVariable } from "./config/known-variables.js";
import { loadCatalog } from "./core.js";
import { EnvReader, type Env } from "./domain/env-settings.js";
import type { WorkflowCatalog } from "./engine/workflow-catalog.js";
import { withPluginKinds } from "./engine/nodes/node-registry.js";
import type { TaskHandler } from "./workflows/workflow-types.js";
import { loadHandlersModule } from "./handlers-module.js";
import { resolveHostOptions, type HostOptions } from "./host-options.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createTelemetry } from "./observability/telemetry.js";
import { openStore } from "./store/open-store.js";
import { ShutdownSteps } from "./shutdown-deadline.js";

/** A host started by `startHost`. */
export interface RunningHost {
  /** Where it listens, e.g. `http://127.0.0.1:8080` (`https://` with TLS; the agent card's JSON-RPC endpoint is `${url}/a2a/jsonrpc`). */
  url: string;
  /** The address callers are told about on the agent card (PUBLIC_URL; `url` when not set). */
  publicUrl: string;
  port: number;
  /** Drains like SIGTERM: refuses new requests, ends streams, releases task leases, closes the store. */
  close(): Promise<void>;
}

/** What the CLI's shutdown deadline reads of a host (src/main.ts): SHUTDOWN_GRACE_MS and the step `close()` is in. */
export interface ShutdownPlan {
  graceMs: number;
  steps: ShutdownSteps;
}

// Kept beside the host object rather than on it: RunningHost is public, the shutdown plan is the CLI's business.
const shutdownPlans = new WeakMap<RunningHost, ShutdownPlan>();

/** The shutdown plan of a host this module started. */
export function shutdownPlanOf(host: RunningHost): ShutdownPlan {
  const plan = shutdownPlans.get(host);
  if (!plan) throw new Error("not a host started by startHost");
  return plan;
}

/** PORT=0 without PUBLIC_URL: a free port is chosen first, so the agent card names the port callers reach. */
async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** What a start needs before it opens the store: every setting, handler and workflow checked. */
export interface SettledHost {
  config: Config;
  handlers: Record<string, TaskHandler>;
  /** The workflows, checked against the node kinds (built-in and plugin ones: `catalog.kinds`). */
  catalog: WorkflowCatalog;
}

/**
 * Reads options and environment as one settings object; every problem of either is in one ConfigError (unknown
 * `env` names too). Then the workflows, before the store is opened: every problem in one WorkflowLoadError.
 * Environment variables one typo away from one we read are warnings on `logger` (else a logger at LOG_LEVEL),
 * logged even when the start then fails: the typo may be why. `pickPort`: PORT=0 without PUBLIC_URL picks the
 * free port now (a start); a check leaves it.
 */
export async function settleHost(
  options: HostOptions,
  processEnv: Env,
  { pickPort = true, logger }: { pickPort?: boolean; logger?: Logger } = {},
): Promise<SettledHost> {
  const resolved = resolveHostOptions(options, processEnv);
  const problems = [...resolved.problems];
  if (pickPort && resolved.env["PORT"] === "0" && !resolved.env["PUBLIC_URL"])
    resolved.env["PORT"] = String(await freePort(resolved.env["HOST"] || "127.0.0.1"));
  let config: Config | undefined;
  try {
    config = loadConfig(resolved.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems.map((p) => resolved.explain(p)));
  }
  const optionsEnv = typeof options.env === "object" && options.env !== null ? options.env : undefined;
  const names = checkVariableNames(processEnv, optionsEnv, new EnvReader(resolved.env).list("WORKFLOW_VARIABLES"));
  problems.push(...names.problems);
  if (names.warnings.length > 0) {
    const log = logger ?? createLogger(config?.logLevel ?? "info");
    for (const warning of names.warnings)
      log.warn({ event: "config.unknown_variable", ...warning }, unknownVariableLine(warning));
  }
  const handlers: Record<string, TaskHandler> = {};
  // Plugin node kinds: the module's first, then the option's; one list, so a name given by both is a problem.
  const nodeKinds: unknown[] = [];
  const modulePath = resolved.env["HANDLERS_MODULE"];
  if (modulePath) {
    const loaded = await loadHandlersModule(modulePath);
    problems.push(...loaded.problems);
    Object.assign(handlers, loaded.handlers);
    nodeKinds.push(...loaded.nodeKinds);
  }
  if (Array.isArray(options.nodeKinds)) nodeKinds.push(...options.nodeKinds);
  const kinds = withPluginKinds(
    nodeKinds,
    modulePath && Array.isArray(options.nodeKinds)
      ? "nodeKinds (HANDLERS_MODULE's, then the option's)"
      : modulePath
        ? `HANDLERS_MODULE ${modulePath}: nodeKinds`
        : "option nodeKinds",
  );
  problems.push(...kinds.problems);
  for (const [name, handler] of Object.entries(options.handlers ?? {})) {
    if (name in handlers) problems.push(`handler "${name}" is given both as an option and by HANDLERS_MODULE`);
    else handlers[name] = handler;
  }
  if (problems.length > 0 || !config) throw new ConfigError(problems);
  const catalog = await loadCatalog(config, handlers, options.workflows, kinds.registry);
  const log = logger ?? createLogger(config.logLevel);
  for (const warning of catalog.warnings) log.warn({ event: "workflow.warning", warning }, warning);
  return { config, handlers, catalog };
}

/** The warning for a variable that is set but not read, naming the one it probably means. */
export function unknownVariableLine({ variable, suggestion }: NearVariable): string {
  return `${variable} is set but openwop-a2a-host does not read it: did you mean ${suggestion}? (as set, it has no effect)`;
}

/** `scheme://address:port` of a listening socket (an IPv6 address in brackets), as bound: `0.0.0.0` says every interface. */
function listeningUrl(config: Config, address: AddressInfo, host = address.address): string {
  return `${config.tls ? "https" : "http"}://${address.family === "IPv6" && host === address.address ? `[${host}]` : host}:${address.port}`;
}

/**
 * Where the host listens (the bound address, TLS or cleartext, which HTTP versions) and, when PUBLIC_URL is set
 * to something else, the address the card tells callers: behind a proxy the two differ, and an operator
 * checking the port needs the first.
 */
function startupLine(
  config: Config,
  address: AddressInfo,
  store: string,
  app: Awaited<ReturnType<typeof createApp>>,
): string {
  const listening = listeningUrl(config, address);
  const protocols = config.tls ? "TLS: HTTP/1.1 + h2" : "cleartext: HTTP/1.1 + h2c";
  const publicUrl = config.publicUrlSet && config.publicUrl !== listening ? `, public URL ${config.publicUrl}` : "";
  return (
    `openwop-a2a-host listening on ${listening} (${protocols})${publicUrl} — A2A JSON-RPC, gRPC, Connect, gRPC-Web, HTTP+JSON, OpenWOP REST; ` +
    `agent: "${app.agentName}", skills: ${app.skills.join(", ")}; store: ${store}; auth: ${app.auth.summary}; ${consoleAccessDescription(app.auth, config.operator)}; ${app.push.description}`
  );
}

/**
 * Runs the host inside this process: your handlers, workflows and identity, the same settings as the CLI
 * (what `options` leaves out is read from the environment). Resolves once it listens and has resumed every
 * unfinished task. Bad options or environment: a ConfigError listing every problem, and nothing started.
 */
export function startHost(options: HostOptions = {}): Promise<RunningHost> {
  return launchHost(options, process.env);
}

/** `startHost` with the environment and logger given: what tests and the bench embed. */
export async function launchHost(options: HostOptions, processEnv: Env, logger?: Logger): Promise<RunningHost> {
  const { config, handlers, catalog } = await settleHost(options, processEnv, logger ? { logger } : {});
  // Every line names the instance: with several instances on one database, the task lease owner it is.
  const log = (logger ?? createLogger(config.logLevel)).child({ instanceId: config.leases.instanceId });
  const opened = await openStore(config, log);
  // OTEL_EXPORTER_OTLP_ENDPOINT (and the other standard OTEL_* variables) turn on OTLP export; /metrics is always served.
  const telemetry = await createTelemetry({ env: processEnv });
  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    app = await createApp({
      config,
      logger: log,
      store: opened.store,
      durableStore: opened.durable,
      ...(opened.warning ? { storeWarning: opened.warning } : {}),
      pushConfigs: opened.pushConfigs,
      idempotency: opened.idempotency,
      hostEvents: opened.hostEvents,
      telemetry,
      handlers,
      // Checked above, before the store was opened (options.workflows included).
      catalog,
    });
  } catch (err) {
    await opened.stop();
    await telemetry.shutdown();
    throw err;
  }
  const address = await app.listen();
  log.info(
    {
      port: address.port,
      host: address.address,
      env: config.env,
      store: opened.store.kind,
      startupMs: Math.round(process.uptime() * 1000),
    },
    startupLine(config, address, opened.description, app),
  );
  // Every interface: callers on this machine reach it as localhost.
  const wildcard = address.address === "0.0.0.0" || address.address === "::";
  let closing: Promise<void> | undefined;
  const steps = new ShutdownSteps();
  const running: RunningHost = {
    url: listeningUrl(config, address, wildcard ? "localhost" : address.address),
    publicUrl: config.publicUrl,
    port: address.port,
    close() {
      closing ??= (async () => {
        log.info("shutting down: draining requests and ending streams");
        await app.close(steps);
        await steps.run("closing the store", () => opened.stop());
        await steps.run("flushing telemetry", () => telemetry.shutdown());
        log.info("stopped");
      })();
      return closing;
    },
  };
  shutdownPlans.set(running, { graceMs: config.shutdownGraceMs, steps });
  return running;
}
