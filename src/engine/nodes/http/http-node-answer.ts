import type { Part } from "../../../domain/a2a-types.js";
import { isObject } from "../../../domain/json-shape.js";
import { HandlerError, type HandlerArtifact, type HandlerResult } from "../../../workflows/workflow-types.js";

/*
 * What an `http` node's service answers, read as untrusted input: a HandlerResult (`{output?, artifacts?}`, every
 * part checked) or a failure's detail for the run's error, bounded and with secrets redacted.
 */

/** The stable error codes an `http` node fails with (the run's `error.code`). */
export const HTTP_NODE_ERRORS = {
  /** The service answered 4xx (not 408/425/429): the request itself is wrong; not retried. */
  clientError: "http_client_error",
  /** Every attempt failed with a retryable failure (5xx, 408/425/429, timeout, network). */
  retriesExhausted: "http_retries_exhausted",
  /** The answer is not a HandlerResult (not JSON, unknown fields, bad artifacts), too large, or a redirect. */
  badResponse: "http_bad_response",
  /** The egress guard refused the URL (scheme, private or loopback address, port, allow/deny lists); the message names the setting that would allow it. */
  egressRefused: "http_egress_refused",
  /** The url or a header names a variable of WORKFLOW_VARIABLES that is not set. */
  variableUnset: "http_variable_unset",
  /** The host runs without an HTTP client for http nodes (an engine built without one, e.g. in tests). */
  unavailable: "http_node_unavailable",
} as const;

const MAX_DETAIL = 200;

function malformed(where: string, reason: string): HandlerError {
  return new HandlerError(HTTP_NODE_ERRORS.badResponse, `${where} answered a malformed result: ${reason}`);
}

function parsePart(raw: unknown, path: string, where: string): Part {
  if (!isObject(raw)) throw malformed(where, `${path} must be an object`);
  const metadata = raw["metadata"];
  if (metadata !== undefined && !isObject(metadata)) throw malformed(where, `${path}.metadata must be an object`);
  const meta = metadata !== undefined ? { metadata } : {};
  switch (raw["kind"]) {
    case "text":
      if (typeof raw["text"] !== "string") throw malformed(where, `${path}.text must be a string`);
      return { kind: "text", text: raw["text"], ...meta };
    case "data":
      if (!isObject(raw["data"])) throw malformed(where, `${path}.data must be an object`);
      return { kind: "data", data: raw["data"], ...meta };
    case "file": {
      const file = raw["file"];
      if (!isObject(file)) throw malformed(where, `${path}.file must be an object`);
      for (const key of ["uri", "bytes", "mimeType", "name"]) {
        if (file[key] !== undefined && typeof file[key] !== "string")
          throw malformed(where, `${path}.file.${key} must be a string`);
      }
      if (file["uri"] === undefined && file["bytes"] === undefined)
        throw malformed(where, `${path}.file needs uri or bytes`);
      const pick = Object.fromEntries(
        ["uri", "bytes", "mimeType", "name"].flatMap((k) => (file[k] !== undefined ? [[k, file[k]]] : [])),
      );
      return { kind: "file", file: pick, ...meta };
    }
    default:
      throw malformed(where, `${path}.kind must be "text", "data" or "file"`);
  }
}

/** The service's 2xx body as a HandlerResult: empty, or a JSON object with only `output` and `artifacts`. */
export function parseHttpNodeAnswer(body: string, where: string): HandlerResult {
  if (body.trim() === "") return {};
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw malformed(where, "the body is not JSON");
  }
  if (!isObject(value)) throw malformed(where, "the body must be a JSON object {output?, artifacts?}");
  const extra = Object.keys(value).filter((k) => k !== "output" && k !== "artifacts");
  if (extra.length > 0)
    throw malformed(
      where,
      `unknown field${extra.length > 1 ? "s" : ""} ${extra
        .slice(0, 5)
        .map((k) => JSON.stringify(k.slice(0, 40)))
        .join(", ")} (expected output, artifacts)`,
    );
  const result: HandlerResult = {};
  if (value["output"] !== undefined) result.output = value["output"];
  const artifacts = value["artifacts"];
  if (artifacts === undefined) return result;
  if (!Array.isArray(artifacts)) throw malformed(where, "artifacts must be an array");
  result.artifacts = artifacts.map((raw, i): HandlerArtifact => {
    const path = `artifacts[${i}]`;
    if (!isObject(raw)) throw malformed(where, `${path} must be an object`);
    const { artifactId, name, description, parts } = raw;
    if (artifactId !== undefined && (typeof artifactId !== "string" || artifactId === ""))
      throw malformed(where, `${path}.artifactId must be a non-empty string`);
    if (typeof name !== "string" || name === "") throw malformed(where, `${path}.name must be a non-empty string`);
    if (description !== undefined && typeof description !== "string")
      throw malformed(where, `${path}.description must be a string`);
    if (!Array.isArray(parts) || parts.length === 0) throw malformed(where, `${path}.parts must be a non-empty array`);
    return {
      ...(artifactId !== undefined ? { artifactId } : {}),
      name,
      ...(description !== undefined ? { description } : {}),
      parts: parts.map((p, j) => parsePart(p, `${path}.parts[${j}]`, where)),
    };
  });
  return result;
}

/**
 * A readable reason from an error answer: `error` (a string, or an object's `message`), `message`, `detail` or
 * `title` of a JSON body; one line, truncated, with every value in `secrets` redacted. Undefined when none.
 */
export function errorDetailOf(body: string, secrets: readonly string[] = []): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(value)) return undefined;
  const error = value["error"];
  const candidates = [
    error,
    isObject(error) ? error["message"] : undefined,
    value["message"],
    value["detail"],
    value["title"],
  ];
  let text = candidates.find((c): c is string => typeof c === "string" && c.trim() !== "");
  if (text === undefined) return undefined;
  for (const secret of secrets) if (secret.length >= 4) text = text.split(secret).join("[redacted]");
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u001f\u007f-\u009f\s]+/gu, " ").trim();
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}
