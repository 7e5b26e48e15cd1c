import { isFinalA2AState, isTerminalA2AState, type A2ATaskStateValue } from "../domain/run-status.js";
import type { RunEvent } from "../domain/task-record.js";
import type { PushDelivery } from "../store/push-config-store.js";
import type { PushTransitions } from "./push-settings.js";
import { statusKeyOf } from "./webhook-attempts.js";

/** Which statuses a push config hears: a new one, of the kinds `PUSH_TRANSITIONS` asks for. */
export function isPushable(
  transitions: PushTransitions,
  state: A2ATaskStateValue,
  statusKey: string,
  lastStatusKey: string | null,
): boolean {
  if (statusKey === lastStatusKey) return false;
  // The minimum set (OpenWOP RFC 0100 §4): a caller must hear when its task needs input or ends.
  return transitions === "all" || isFinalA2AState(state);
}

/** Whether the log after the cursor holds a status to push or to settle on (else no lease is worth taking). */
export function hasPushWork(transitions: PushTransitions, from: PushDelivery, events: readonly RunEvent[]): boolean {
  let last = from.lastStatusKey;
  for (const event of events) {
    const status = event.a2a?.status;
    if (event.sequence <= from.cursor || !status) continue;
    const statusKey = statusKeyOf(event, status.state);
    if (isTerminalA2AState(status.state) || isPushable(transitions, status.state, statusKey, last)) return true;
    last = statusKey;
  }
  return false;
}
