import type { RunInterrupts } from "../../runs/run-interrupts.js";
import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { resumeValueOf } from "./openwop-runs-routes.js";
import { readJsonObject } from "./openwop-request.js";

export interface OpenwopInterruptRoutesOptions {
  interrupts: RunInterrupts;
  maxBodyBytes: number;
  maxInputDepth: number;
}

/**
 * Signed interrupt tokens (interrupt.md): the token is the credential, so these routes need no API key and
 * ignore the caller's principal; the run's own tenant applies, and `decidedBy` is `token:<interruptId>`.
 */
export function addOpenwopInterruptRoutes(router: HttpRouter, options: OpenwopInterruptRoutesOptions): void {
  const { interrupts } = options;

  router.add("GET", "/v1/interrupts/{token}", async (_req, res, { token }) => {
    sendJson(res, 200, await interrupts.inspect(token!), { "cache-control": "no-store" });
  });

  router.add("POST", "/v1/interrupts/{token}", async (req, res, { token }) => {
    const resumeValue = resumeValueOf((await readJsonObject(req, options))!);
    sendJson(res, 200, await interrupts.resolveWithToken(token!, resumeValue), { "cache-control": "no-store" });
  });
}
