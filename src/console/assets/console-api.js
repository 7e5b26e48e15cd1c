/* global sessionStorage, fetch, TextDecoderStream */
// Requests to the console's API: every one carries the API key the operator entered (kept for this tab only),
// or, signed in through the identity provider, the session cookie the browser keeps and the session's CSRF token.
import { setLive } from "./console-status.js";

export function apiKey() {
  return sessionStorage.getItem("openwop-console-key") ?? "";
}

/** The key the operator entered, kept for this tab only. */
export function setApiKey(key) {
  sessionStorage.setItem("openwop-console-key", key);
}

/** The signed-in session's CSRF token (from /console/auth/session): sent on every call the cookie authenticates. */
export let csrfToken = "";

/** Set from the session once it is read (console-sign-in.js); empty when not signed in. */
export function setCsrfToken(token) {
  csrfToken = token;
}

function headers(extra = {}) {
  const key = apiKey();
  return { ...(key ? { authorization: `Bearer ${key}` } : csrfToken ? { "x-csrf-token": csrfToken } : {}), ...extra };
}

export class ApiError extends Error {
  constructor(status, body) {
    super(typeof body === "object" && body ? `${body.error}: ${body.message}` : `${status} ${body}`);
    this.status = status;
    this.body = body;
  }
}

export async function api(path, init = {}) {
  const res = await fetch(path, { ...init, headers: headers(init.headers) });
  const body = res.headers.get("content-type")?.includes("json") ? await res.json() : await res.text();
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

export function postJson(path, body) {
  return api(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
}

/** Server-sent events over fetch (EventSource cannot send the Authorization header). */
export async function stream(path, signal, onMessage) {
  const res = await fetch(path, { headers: headers({ accept: "text/event-stream" }), signal });
  if (!res.ok || !res.body) throw new Error(`${path}: ${res.status}`);
  setLive("live");
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data = [];
        for (const line of frame.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
        }
        if (data.length > 0) onMessage(event, JSON.parse(data.join("\n")));
      }
    }
  } finally {
    reader.releaseLock();
  }
}
