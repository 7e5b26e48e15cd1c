/**
 * `openwop-a2a-host --help`: the commands, the variables a first run needs, exit codes. Every variable of
 * the host is in docs/configuration.md; the test of this text checks that each name here is one of them.
 */
export function cliHelp(version: string): string {
  return `openwop-a2a-host ${version}: OpenWOP workflows served as a durable A2A agent

Usage:
  openwop-a2a-host [start]     start the host (the default); SIGTERM or SIGINT drain it and exit 0
  openwop-a2a-host check       load the configuration, the handlers and the workflows, report every
                               problem and exit (0: all good, 2: problems); never listens
  openwop-a2a-host init [dir]  write a new agent project into dir (default: here; new or empty only):
                               workflows, TypeScript handlers, startHost, a test; then npm install
  openwop-a2a-host keys [--format env|kubernetes]
                               print every key a production start needs, freshly generated, as
                               .env lines (the default) or a Kubernetes Secret manifest
  openwop-a2a-host evidence run [--out file] [--instances n] [--build commit:<sha>] [--accept-skill id]
                               [--discovery-url url] [--api-key-file file]
                               start n instances (3) on MONGODB_URI, SIGKILL some, write a signed
                               OpenWOP evidence bundle v3 (docs/openwop.md "Recovery evidence")
  openwop-a2a-host evidence verify <file> [--discovery url|file]
                               check a bundle's signature against the host's published key
  openwop-a2a-host --help      this help (also -h)
  openwop-a2a-host --version   the version (also -v)

Settings come from the environment, never from arguments. The ones a first run needs:
  HANDLERS_MODULE      your task handlers: an ES module exporting \`handlers\` (or a default export);
                       a .ts file needs tsx installed in your project
  WORKFLOWS_DIR        the folder of your workflow definitions (YAML or JSON)
  WORKFLOW_VARIABLES   environment variables workflows may use as \${NAME} (comma-separated)
  A2A_PEERS            remote A2A agents a2a.invoke nodes call by name (JSON)
  AGENT_NAME           your agent's name on the agent card (also AGENT_DESCRIPTION, AGENT_VERSION)
  PORT, HOST           where to listen (8080 on 127.0.0.1)
  PUBLIC_URL           the address callers use, on the agent card (required in production)
  MONGODB_URI          the database (without it: embedded MongoDB under DATA_DIR, else in memory)
  API_KEYS             callers' keys (AUTH_OIDC_ISSUER(S): identity-provider tokens; TLS_CLIENT_PRINCIPALS:
                       client certificates); with none, every caller is the default tenant (dev only)
  PUSH_ENABLED         push notifications on (true, the default) or off
  NODE_ENV             production refuses to start without MONGODB_URI, PUBLIC_URL, a way in and keys
                       (each secret also reads from a file: API_KEYS_FILE, MONGODB_URI_FILE, …)
  LOG_LEVEL            fatal, error, warn, info (the default), debug, trace or silent
Every variable: docs/configuration.md. A variable one typo away from one of these (PUSH_ENABLE) is
reported as a warning.

Exit codes: 0 stopped cleanly (or the check passed); 2 configuration, handler or workflow problems,
all of them in one "config.invalid" log line; 1 any other failed start ("start.failed").
Logs: one JSON line per event; on a terminal, one readable line each.
`;
}
