import { DomainError, invalidParams } from "../../domain/errors.js";
import { parseJsonBody } from "../../domain/json-input.js";
import { isObject, type JsonObject } from "../../domain/json-shape.js";
import { mediaTypeOf, readBody, type HttpRequest } from "../http-io.js";

/**
 * Request decoding shared by the OpenWOP REST routes: JSON bodies (415 for another media type, 413 over the
 * limit, 400 for bad JSON) and integer query parameters, each refused with a message naming what is wrong.
 */
/** Bounds of a request body: bytes (MAX_BODY_BYTES) and nesting (MAX_INPUT_DEPTH). */
export interface BodyLimits {
  maxBodyBytes: number;
  maxInputDepth: number;
}

export async function readJsonObject(
  req: HttpRequest,
  limits: BodyLimits,
  options: { optional?: boolean } = {},
): Promise<JsonObject | undefined> {
  const declared = req.headers["content-length"];
  const chunked = req.headers["transfer-encoding"] !== undefined;
  const mayHaveBody = chunked || (declared !== undefined && declared !== "0");
  if (mayHaveBody || !options.optional) checkJsonMediaType(req);
  const raw = await readBody(req, limits.maxBodyBytes);
  if (raw.length === 0) {
    if (options.optional) return undefined;
    throw invalidParams("a JSON object body is required");
  }
  if (!mayHaveBody) checkJsonMediaType(req);
  const value = parseJsonBody(raw, limits.maxInputDepth);
  if (!isObject(value)) throw invalidParams("the body must be a JSON object");
  return value;
}

function checkJsonMediaType(req: HttpRequest): void {
  const type = mediaTypeOf(req);
  if (type !== "application/json" && !/^application\/[a-z0-9.+-]*\+json$/.test(type)) {
    throw new DomainError(
      "unsupported-media-type",
      `Content-Type must be application/json (got "${req.headers["content-type"] ?? ""}")`,
      {
        contentType: req.headers["content-type"] ?? null,
      },
    );
  }
}

export function queryOf(req: HttpRequest): URLSearchParams {
  return new URL(req.url ?? "/", "http://host").searchParams;
}

/** An integer from a query parameter or header, within [min, max]; `fallback` when absent or empty. */
export function integerParam(
  raw: string | null | undefined,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (raw === null || raw === undefined || raw === "") return fallback;
  if (!/^-?\d{1,15}$/.test(raw))
    throw invalidParams(`${name} must be an integer (got ${JSON.stringify(raw)})`, { path: name });
  const value = Number(raw);
  if (value < min || value > max)
    throw invalidParams(`${name} must be between ${min} and ${max} (got ${value})`, { path: name });
  return value;
}

export function headerOf(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
