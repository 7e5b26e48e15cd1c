import { A2AService } from "../../gen/a2a/v1/a2a_pb.js";
import type { A2AVersionModule } from "../version-module.js";
import { v03ConnectService } from "./v03-connect-service.js";
import { v03ErrorShapes } from "./v03-errors.js";
import { v03JsonRpcMethods } from "./v03-jsonrpc-methods.js";
import { v03Operations } from "./v03-operations.js";
import { v03PeerClient } from "./v03-peer-client-codec.js";
import { v03PushBody } from "./v03-push-body.js";
import { v03RestRoutes } from "./v03-rest-routes.js";

const JSON_RPC_METHOD_NAMES = [
  "message/send",
  "message/stream",
  "tasks/get",
  "tasks/cancel",
  "tasks/resubscribe",
  "tasks/pushNotificationConfig/set",
  "tasks/pushNotificationConfig/get",
  "tasks/pushNotificationConfig/list",
  "tasks/pushNotificationConfig/delete",
  "agent/getAuthenticatedExtendedCard",
] as const;

/** A2A 0.3 (the legacy window of OpenWOP RFC 0152): everything the bindings need, read through the registry. */
export const v03: A2AVersionModule = {
  version: "0.3",
  bind(deps) {
    const ops = v03Operations(deps);
    return {
      jsonRpc: v03JsonRpcMethods(ops),
      rest: v03RestRoutes(ops),
      connect: (router) => router.service(A2AService, v03ConnectService(ops)),
    };
  },
  jsonRpcMethodNames: JSON_RPC_METHOD_NAMES,
  connectService: A2AService,
  restMediaType: "application/json",
  errors: v03ErrorShapes,
  push: v03PushBody,
  peer: v03PeerClient,
  // The superset card: the 0.3 card with the 1.0 `supportedInterfaces` embedded, which every 0.3 client reads.
  card: { profile: "a2a-0.3-legacy", document: (card) => card },
};
