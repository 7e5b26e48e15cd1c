// The layers of src/ and the import directions allowed between its folders (docs/architecture.md).
// A folder may import itself and the folders listed for it, nothing else under src/. Files directly under
// src/ (main.ts, app.ts, core.ts) compose everything and may import any folder. The table is a DAG, so no
// folder cycle can form; `no-circular` also refuses cycles between single modules.
const allowed = {
  gen: [],
  domain: [],
  observability: ["domain"],
  secrets: ["domain", "observability"],
  egress: ["domain", "observability"],
  machine: ["domain"],
  // What a user writes: workflow definitions, task handlers and their context (the public types), and the
  // handlers of our built-in workflows.
  workflows: ["domain"],
  schemas: ["domain"],
  // egress: the OIDC issuer's discovery and JWKS are fetched through the one outbound client.
  auth: ["domain", "egress"],
  store: ["domain", "machine", "observability"],
  interrupts: ["domain", "machine", "secrets", "observability"],
  peer: ["domain", "egress", "gen", "secrets", "observability"],
  push: ["domain", "egress", "store", "machine", "auth", "secrets", "observability"],
  // egress: the `http` node calls services through the one outbound client.
  engine: ["domain", "machine", "store", "schemas", "auth", "egress", "peer", "observability", "workflows"],
  // Tenant limits and overload shedding: they implement the engine's admission ports (engine/task-admission.ts),
  // count in the store (store/tenant-usage-store.ts) and charge callers as auth names them.
  limits: ["domain", "auth", "store", "observability", "engine"],
  runs: ["domain", "engine", "machine", "store", "interrupts", "auth", "observability", "workflows"],
  // peer: each version folder implements the client half the peer transports call (peer/peer-version.ts).
  a2a: ["domain", "engine", "machine", "store", "push", "interrupts", "auth", "schemas", "gen", "observability", "workflows", "peer"],
  transport: ["domain", "a2a", "runs", "auth", "gen", "observability"],
  // The operator console, whole: its operations over the engine and the runs API, push views, access rule, routes and page.
  // secrets: its sign-in keeps the session's access token and the client secret as SecretValues.
  // limits: the tenants' usage and refusals it shows.
  console: ["domain", "auth", "engine", "interrupts", "machine", "push", "runs", "store", "transport", "observability", "workflows", "secrets", "limits"],
  // Telemetry wrapped around the store, the egress clients, handlers and tasks (core.ts installs them).
  observed: ["domain", "egress", "engine", "observability", "peer", "push", "store", "workflows"],
  // a2a: the agent-card settings (which card the bare well-known path serves) live with the card;
  // transport: the listening port's connection timeouts and caps (transport/connection-settings.ts).
  // The command line's pieces: its arguments, the help text, how a failed start is reported (src/main.ts runs them).
  // secrets: `evidence` signs bundles with the host's evidence key and checks them against published keys.
  cli: ["domain", "engine", "observability", "secrets"],
  config: ["domain", "auth", "egress", "interrupts", "peer", "push", "store", "engine", "secrets", "observability", "a2a", "workflows", "transport", "console", "limits"],
};

const folders = Object.keys(allowed);

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Modules must not import each other in a loop.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "known-folders-only",
      severity: "error",
      comment: "Every folder under src/ has a row in .dependency-cruiser.cjs (and a place in docs/architecture.md).",
      from: { path: "^src/[^/]+/", pathNot: `^src/(${folders.join("|")})/` },
      to: {},
    },
    {
      name: "undici-only-in-egress",
      severity: "error",
      comment: "Outbound HTTP goes through the one egress client (src/egress/egress-http-client.ts): undici is imported only under src/egress/.",
      from: { path: "^src/", pathNot: "^src/egress/" },
      to: { path: "node_modules/undici/" },
    },
    ...folders.map((folder) => ({
      name: `layer-${folder}`,
      severity: "error",
      comment: `src/${folder}/ may import only: ${allowed[folder].join(", ") || "nothing else under src/"}.`,
      from: { path: `^src/${folder}/` },
      to: { path: "^src/", pathNot: `^src/(${[folder, ...allowed[folder]].join("|")})/` },
    })),
  ],
  options: {
    // undici is the one package followed in: the rule above keeps it inside src/egress/.
    includeOnly: "(^src/|node_modules/undici/)",
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
