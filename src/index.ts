/**
 * openwop-a2a-host: the public API. This file is the package's only import path ("exports" in package.json);
 * everything it does not export is internal and may change in any release.
 *
 * Stable (semver): `startHost` and its options, `HandlerError`, `ConfigError`, `WorkflowLoadError`, `reportStartFailure`, the handler and workflow
 * types below, and the node-kind plugin API (`NodeKind` and the types it names: the node's view of the run, its
 * verbs, its decisions, its services' host pieces, its schema fragment, its routes and console view; see
 * docs/node-kinds.md). A breaking change to any of them is a new major version; a new optional member of an interface
 * a kind implements, or a new member of one the host hands a kind, is a minor one.
 */
export { startHost, type RunningHost } from "./start-host.js";
export type { HostOptions, AgentIdentity, PeerOptions } from "./host-options.js";
export { ConfigError } from "./domain/env-settings.js";
export { WorkflowLoadError } from "./engine/workflow-load-error.js";
export { reportStartFailure } from "./cli/start-failure.js";
export {
  HandlerError,
  type TaskHandler,
  type HandlerContext,
  type HandlerResult,
  type HandlerArtifact,
  type ArtifactChunk,
  type ConversationTask,
  type WorkflowDefinition,
  type WorkflowNode,
  type TaskNode,
  type ApprovalNode,
  type ClarificationNode,
  type DelayNode,
  type SwitchNode,
  type SwitchCondition,
  type OutputTest,
  type OutputExpectation,
  type ArtifactSource,
  type A2AInvokeNode,
  type HttpNode,
} from "./workflows/workflow-types.js";
export type { Part, FileContent, Message, Artifact } from "./domain/a2a-types.js";
export type {
  NodeKind,
  NodeBase,
  NodeSchemaFragment,
  NodeDecision,
  NodeRunView,
  NodeRun,
  NodeExecutor,
  NodeStepResult,
  NodeEffectHandle,
  NodeEffectContext,
  NodeReplyReader,
  NodeReplyOutcome,
  NodeView,
  NodeGraphEdge,
  NodeWaiting,
  NodeServiceParts,
  NodeHost,
  NodeHttpClient,
  NodeHttpRequest,
  NodeHttpResponse,
  NodeHttpStream,
  NodeLogger,
  NodeCheckContext,
  NodeRoute,
  NodeRouteRequest,
  NodeRouteAnswer,
} from "./engine/nodes/public-node-kind.js";
