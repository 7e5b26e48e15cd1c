import {
  A2A_DRAFT_VERSIONS,
  A2A_VERSIONS,
  A2A_VERSIONS_NEWEST_FIRST,
  UNNAMED_A2A_VERSION,
  type A2AVersion,
} from "../domain/a2a-version.js";
import type { PushBody } from "./push-status-facts.js";
import { v03 } from "./v03/v03-version.js";
import { v10 } from "./v10/v10-version.js";
import { v11 } from "./v11/v11-version.js";
import type { PeerVersionClient } from "../peer/peer-version.js";
import type { A2AVersionModule, VersionBindings, VersionDeps } from "./version-module.js";

/**
 * The registry of served A2A versions: one line per version folder. The JSON-RPC endpoint, the Connect
 * handler, the HTTP+JSON router, the agent card and the push worker read a version's parts from here and
 * nowhere else. Adding a version: its folder (the same file set as v10/), its id in `A2A_VERSIONS` (a draft's
 * in `A2A_DRAFT_VERSIONS`), and a line here (docs/architecture.md "How to add …").
 */
const REGISTRY: Record<A2AVersion, A2AVersionModule> = {
  "0.3": v03,
  "1.0": v10,
  "1.1": v11,
};

/** The version a request without `A2A-Version` speaks, and the one that answers unknown JSON-RPC methods. */
export const DEFAULT_A2A_VERSION: A2AVersion = UNNAMED_A2A_VERSION;

export function versionModule(version: A2AVersion): A2AVersionModule {
  return REGISTRY[version];
}

/** Every released version, in `A2A_VERSIONS` order (drafts are served per app: `bindVersions`). */
export function versionModules(): A2AVersionModule[] {
  return A2A_VERSIONS.map((v) => REGISTRY[v]);
}

/**
 * The version that answers a call whose shape (method name, gRPC service, path) belongs to `byShape`, given
 * the version the call asked for: the asked one when it shares that shape (a draft of `byShape`), else
 * `byShape` (a 0.3 method stays 0.3 whatever the header says, as before drafts).
 */
export function versionAsked(byShape: A2AVersion, asked: A2AVersion): A2AVersion {
  return REGISTRY[asked].sharesShapesWith === byShape ? asked : byShape;
}

/** The versions an app serves: the released ones, then the drafts it switched on (A2A_DRAFT_VERSIONS). */
export function servedVersions(drafts: readonly A2AVersion[] = []): A2AVersion[] {
  return [...A2A_VERSIONS, ...A2A_DRAFT_VERSIONS.filter((d) => drafts.includes(d))];
}

/** The version whose JSON-RPC method table has `method`; unknown names belong to the default version. */
export function versionOfJsonRpcMethod(method: string): A2AVersion {
  return versionModules().find((m) => m.jsonRpcMethodNames.includes(method))?.version ?? DEFAULT_A2A_VERSION;
}

/** The version whose gRPC service is `typeName` (`a2a.v1.A2AService`, `lf.a2a.v1.A2AService`). */
export function versionOfRpcService(typeName: string): A2AVersion | undefined {
  return versionModules().find((m) => m.connectService.typeName === typeName)?.version;
}

/**
 * The client halves the peer client speaks, newest first: its order of preference when a card offers several
 * versions (peer/peer-endpoint.ts). core.ts hands them to the peer client, which never names a version.
 */
export function peerVersions(): PeerVersionClient[] {
  return A2A_VERSIONS_NEWEST_FIRST.map((v) => REGISTRY[v].peer);
}

/** The served versions whose card is signed (their modules say so): the app signs each once at start. */
export function signedCardVersions(drafts: readonly A2AVersion[] = []): A2AVersion[] {
  return servedVersions(drafts).filter((v) => REGISTRY[v].card.signed === true);
}

/** The push body encoder (and content type) for a config registered over `version`. */
export function pushBody(version: A2AVersion): PushBody {
  return REGISTRY[version].push;
}

export type BoundVersions = ReadonlyMap<A2AVersion, VersionBindings>;

/**
 * Every served version's operations over the service, bound once per app and shared by all bindings; the
 * map's keys are the versions the app serves (what each binding negotiates `A2A-Version` against).
 */
export function bindVersions(deps: VersionDeps, drafts: readonly A2AVersion[] = []): BoundVersions {
  return new Map(servedVersions(drafts).map((v) => [v, REGISTRY[v].bind(deps)]));
}
