import type { A2AService } from "../../a2a/a2a-service.js";
import { exportTaskMachine } from "../../machine/machine-export.js";
import type { HttpRouter } from "../http-router.js";
import { sendJson } from "../http-io.js";
import { sendOpenwopError } from "./openwop-errors.js";

export interface DiscoveryOptions {
  service: A2AService;
  publicUrl: string;
  durableTasks: boolean;
  version: string;
  transports: string[];
}

export const AGENT_CARD_PATH = "/.well-known/agent-card.json";

/** The OpenWOP discovery document: required fields plus the `a2a` family at the document root (RFC 0073). */
export function discoveryDocument(options: DiscoveryOptions): Record<string, unknown> {
  const card = options.service.agentCard;
  return {
    protocolVersion: "1.0",
    implementation: { name: "openwop-a2a-host", version: options.version },
    supportedEnvelopes: [],
    schemaVersions: { a2aTaskState: 1, workflow: 1 },
    limits: { clarificationRounds: 10, schemaRounds: 0, envelopesPerTurn: 0 },
    supportedTransports: options.transports,
    eventLogSchemaVersion: 2,
    a2a: {
      supported: true,
      agentCardUrl: `${options.publicUrl}${AGENT_CARD_PATH}`,
      streaming: card.capabilities.streaming,
      pushNotifications: card.capabilities.pushNotifications,
      durableTasks: options.durableTasks,
      protocolVersions: ["0.3"],
      preferredVersion: "0.3",
      profiles: ["a2a-0.3-legacy"],
    },
  };
}

export function addDiscoveryRoutes(router: HttpRouter, options: DiscoveryOptions): void {
  router.add("GET", AGENT_CARD_PATH, async (_req, res) => sendJson(res, 200, options.service.agentCard));
  router.add("GET", "/.well-known/openwop", async (_req, res) => sendJson(res, 200, discoveryDocument(options)));
  router.add("GET", "/v1/a2a/tasks/{taskId}", async (_req, res, params, ctx) => {
    try {
      sendJson(res, 200, await options.service.getA2ATaskState(params["taskId"]!, ctx));
    } catch (err) {
      sendOpenwopError(res, err);
    }
  });
  router.add("GET", "/v1/a2a/task-machine.json", async (_req, res) => sendJson(res, 200, exportTaskMachine()));
  router.add("GET", "/healthz", async (_req, res) => sendJson(res, 200, { status: "ok" }));
}
