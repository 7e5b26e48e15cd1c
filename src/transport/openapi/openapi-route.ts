import { sendJson } from "../http-io.js";
import type { HttpRouter } from "../http-router.js";
import { openApiDocument } from "./openapi-document.js";

/** `GET /v1/openapi.json`: the OpenAPI 3.1 document of the REST surface. */
export function addOpenApiRoute(router: HttpRouter, options: Parameters<typeof openApiDocument>[0]): void {
  const document = openApiDocument(options);
  router.add("GET", "/v1/openapi.json", async (_req, res) => sendJson(res, 200, document));
}
