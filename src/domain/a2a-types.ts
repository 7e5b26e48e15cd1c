import type { A2AVersion } from "./a2a-version.js";
import type { A2ATaskStateValue, InterruptKind } from "./run-status.js";

/**
 * Version-neutral A2A data shapes used inside the service. They follow the v0.3 JSON objects (with `kind`
 * discriminators on parts) because that is also our stored form; each protocol codec converts them.
 */
export type Part =
  | { kind: "text"; text: string; metadata?: Record<string, unknown> }
  | { kind: "file"; file: FileContent; metadata?: Record<string, unknown> }
  | { kind: "data"; data: Record<string, unknown>; metadata?: Record<string, unknown> };

export interface FileContent {
  uri?: string;
  bytes?: string; // base64
  mimeType?: string;
  name?: string;
}

export type Role = "user" | "agent";

export interface Message {
  messageId: string;
  role: Role;
  parts: Part[];
  taskId?: string;
  contextId?: string;
  metadata?: Record<string, unknown>;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Record<string, unknown>;
  extensions?: string[];
}

export interface TaskStatus {
  state: A2ATaskStateValue;
  message?: Message;
  timestamp: string;
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts: Artifact[];
  history: Message[];
  metadata: Record<string, unknown>;
  /** The task's A2A generation (1.1 draft; `TaskRecord.generation`): only the 1.1 codecs write it. */
  generation?: number;
}

export interface TaskStatusUpdate {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
  metadata?: Record<string, unknown>;
  /** The task's generation after this update (1.1 draft): only the 1.1 codecs write it. */
  generation?: number;
}

export interface TaskArtifactUpdate {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Record<string, unknown>;
  /** The task's generation after this update (1.1 draft): only the 1.1 codecs write it. */
  generation?: number;
}

export type StreamEvent =
  { kind: "task"; task: Task } | { kind: "message"; message: Message } | TaskStatusUpdate | TaskArtifactUpdate;

/** The persisted durable-task read model (schemas/a2a-task-state.schema.json). Never holds content or secrets. */
export interface A2ATaskState {
  taskId: string;
  runId: string;
  contextId?: string;
  state: A2ATaskStateValue;
  interruptKind?: "approval" | "clarification";
  updatedAt: string;
  pushConfig?: { url: string; tokenFingerprint?: string };
}

export interface PushNotificationConfig {
  id?: string;
  url: string;
  token?: string;
  authentication?: { schemes: string[]; credentials?: string };
  /**
   * The A2A version the config was registered over (absent = 0.3): deliveries use that version's body
   * (0.3: a bare JSON event, application/json; 1.0: a StreamResponse, application/a2a+json).
   */
  protocolVersion?: A2AVersion;
}

/**
 * A push config's `authentication` as the wire gave it: `{}` or an empty scheme list means no authentication
 * (credentials without a scheme cannot be sent), so such a config registers without one.
 */
export function pushAuthentication(
  schemes: readonly string[] | undefined,
  credentials: string | undefined,
): { authentication?: PushNotificationConfig["authentication"] } {
  const named = (schemes ?? []).filter((s) => s !== "");
  if (named.length === 0) return {};
  return { authentication: { schemes: named, ...(credentials ? { credentials } : {}) } };
}

/** A push config as registered for one task (v0.3 `TaskPushNotificationConfig`); `id` is always set. */
export interface TaskPushNotificationConfig {
  taskId: string;
  pushNotificationConfig: PushNotificationConfig & { id: string };
}

export interface SendConfiguration {
  acceptedOutputModes?: string[];
  historyLength?: number;
  blocking?: boolean;
  pushNotificationConfig?: PushNotificationConfig;
}

export type { InterruptKind };
