import { createEgressHttpClient, type EgressHttpClient } from "../egress/egress-http-client.js";
import type { HttpNodeSettings } from "../engine/nodes/node-egress-settings.js";
import type { NodeEgress } from "../engine/nodes/node-kind.js";
import type { Telemetry } from "../observability/telemetry.js";
import { observedEgressHttp } from "./observed-egress.js";

/**
 * Outbound HTTP of node kinds (the `http` kind, plugin kinds): each kind asks for its client by name and gets one
 * through the egress guard with the node policy (HTTP_NODE_*), traced as `<name> node`, its refusals naming it
 * the same way. Clients are made on demand, so a host whose kinds call nothing opens nothing; `close` closes them.
 */
export function nodeEgress(settings: HttpNodeSettings, telemetry: Telemetry): NodeEgress & { close(): Promise<void> } {
  const clients: EgressHttpClient[] = [];
  return {
    settings,
    client({ name, accept }) {
      const subject = `${name} node` as const;
      const client = createEgressHttpClient({
        policy: settings.egress,
        subject,
        maxResponseBytes: settings.maxResponseBytes,
        userAgent: `openwop-a2a-host/${name}-node`,
        ...(accept ? { accept } : {}),
      });
      const observed = observedEgressHttp(client, telemetry, subject);
      clients.push(observed);
      return observed;
    },
    close: async () => void (await Promise.all(clients.map((c) => c.close()))),
  };
}
