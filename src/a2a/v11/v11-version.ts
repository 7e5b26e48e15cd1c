import type { ServiceImpl } from "@connectrpc/connect";
import * as draft11 from "../../gen/lf/a2a/v1/draft11/a2a_pb.js";
import type { A2AVersionModule } from "../version-module.js";
import { v10 } from "../v10/v10-version.js";
import { v10ConnectService } from "../v10/v10-connect-service.js";
import { v10JsonRpcMethods } from "../v10/v10-jsonrpc-methods.js";
import { v10RestRoutes } from "../v10/v10-rest-routes.js";
import { v11Operations } from "./v11-operations.js";

const { A2AService } = draft11;

/**
 * The A2A 1.1 draft (a2aproject/A2A dev-1.1, `lf.a2a.v1` plus generations), served only with
 * A2A_DRAFT_VERSIONS=1.1. It reads the same wire shapes as 1.0 (method names, gRPC service, paths), so it
 * names 1.0 in `sharesShapesWith` and the bindings pick it by `A2A-Version: 1.1`. What did not change is
 * 1.0's, by import: error shapes and statuses (plus the table's TaskGenerationMismatch row), the card, the
 * push body (configs are recorded as 1.0's), and the client half (peers are never called with a draft).
 */
export const v11: A2AVersionModule = {
  version: "1.1",
  sharesShapesWith: "1.0",
  bind(deps) {
    // 1.0's binding tables, with the draft's schemas and operations (the draft's messages are 1.0's plus fields).
    const ops = v11Operations(deps);
    return {
      jsonRpc: v10JsonRpcMethods(ops, draft11),
      rest: v10RestRoutes(ops, draft11),
      connect: (router) => router.service(A2AService, v10ConnectService(ops) as ServiceImpl<typeof A2AService>),
    };
  },
  jsonRpcMethodNames: A2AService.methods.map((m) => m.name),
  connectService: A2AService,
  restMediaType: v10.restMediaType,
  errors: v10.errors,
  push: v10.push,
  peer: v10.peer,
  card: { profile: "a2a-1.1-draft", document: v10.card.document, signed: v10.card.signed },
};
