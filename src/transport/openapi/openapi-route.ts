import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { requireMajor2, type OpenwopVersions } from "../openwop-version.js";
import { openApiDocument } from "./openapi-document.js";

/**
 * `GET /v1/openapi.json` (through the OpenWOP 1 overlap) and `GET /openapi.json` (OpenWOP 2's getOpenApiSpec): the
 * OpenAPI 3.1 document of the REST surface, one document for both.
 */
export function addOpenApiRoute(
  router: HttpRouter,
  options: Parameters<typeof openApiDocument>[0] & { versions: OpenwopVersions },
): void {
  const { versions, ...rest } = options;
  const document = openApiDocument(rest);
  if (versions.v1) router.add("GET", "/v1/openapi.json", async (_req, res) => sendJson(res, 200, document));
  router.add("GET", "/openapi.json", async (req, res) => {
    requireMajor2(req, "/openapi.json", versions);
    sendJson(res, 200, document);
  });
}
