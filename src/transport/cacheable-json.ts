import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { HttpRequest, HttpResponse } from "./http-io.js";

export interface Cacheability {
  maxAgeSeconds: number;
  /** When the document last changed (sent as Last-Modified, to the second). */
  lastModified: Date;
  headers?: Record<string, string>;
}

/**
 * A public JSON document (agent card, discovery) that caches and conditional requests can reuse: Cache-Control
 * with max-age, a strong ETag of the exact bytes, Last-Modified; `If-None-Match` (or, without it,
 * `If-Modified-Since`) that still holds answers 304, and HEAD answers the headers alone.
 */
export function sendCacheableJson(req: HttpRequest, res: HttpResponse, body: unknown, cache: Cacheability): void {
  const text = JSON.stringify(body);
  const etag = `"${createHash("sha256").update(text).digest("base64url").slice(0, 27)}"`;
  const lastModified = new Date(Math.floor(cache.lastModified.getTime() / 1000) * 1000);
  const headers = {
    "cache-control": `public, max-age=${cache.maxAgeSeconds}`,
    etag,
    "last-modified": lastModified.toUTCString(),
    ...cache.headers,
  };
  const response = res as ServerResponse;
  if (notModified(req, etag, lastModified)) {
    response.writeHead(304, headers);
    response.end();
    return;
  }
  response.writeHead(200, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  response.end(req.method === "HEAD" ? undefined : text);
}

function notModified(req: HttpRequest, etag: string, lastModified: Date): boolean {
  const ifNoneMatch = header(req, "if-none-match");
  if (ifNoneMatch !== undefined) {
    // Weak comparison (RFC 9110 §13.1.2): W/ prefixes do not matter; `*` matches any current representation.
    const tags = ifNoneMatch.split(",").map((t) => t.trim().replace(/^W\//, ""));
    return tags.includes("*") || tags.includes(etag);
  }
  const since = header(req, "if-modified-since");
  const sinceMs = since !== undefined ? Date.parse(since) : Number.NaN;
  return !Number.isNaN(sinceMs) && lastModified.getTime() <= sinceMs;
}

function header(req: HttpRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
