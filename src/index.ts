/**
 * openwop-a2a-host: the public API. This file is the package's only import path ("exports" in package.json);
 * everything it does not export is internal and may change in any release.
 *
 * Stable (semver): `startHost` and its options, `HandlerError`, `ConfigError`, `WorkflowLoadError`, and the handler and workflow
 * types below. A breaking change to any of them is a new major version.
 */
export { startHost, type RunningHost } from "./start-host.js";
export type { HostOptions, AgentIdentity, PeerOptions } from "./host-options.js";
export { ConfigError } from "./domain/env-settings.js";
export { WorkflowLoadError } from "./engine/workflow-load-error.js";
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
  type A2AInvokeNode,
  type HttpNode,
} from "./workflows/workflow-types.js";
export type { Part, FileContent, Message, Artifact } from "./domain/a2a-types.js";
