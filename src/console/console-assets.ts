import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { HttpResponse } from "../transport/http-io.js";
import type { HttpRouter } from "../transport/http-router.js";

interface Asset {
  body: Buffer;
  type: string;
}

/** No inline script or style, nothing from another origin: the page runs only what we serve. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** The dagre layout library, served from its npm package (no CDN, no bundler). */
function dagrePath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve("@dagrejs/dagre/package.json")), "dist", "dagre.esm.js");
}

/** The page and its code, next to this module: src/ under tsx, dist/src/ in the package (the build copies them). */
const assetsDir = fileURLToPath(new URL("./assets/", import.meta.url));

/**
 * The console's scripts, ES modules: console.js (the page's one script tag) imports the others, which the page
 * also preloads, except console-diagram.js, imported only when a diagram is first needed.
 */
export const CONSOLE_SCRIPTS = [
  "console.js",
  "console-api.js",
  "console-dom.js",
  "console-parts.js",
  "console-sign-in.js",
  "console-status.js",
  "console-task-list.js",
  "console-task-page.js",
  "console-task-graph.js",
  "console-task-timeline.js",
  "console-task-interrupt.js",
  "console-task-steering.js",
  "console-task-push.js",
  "console-diagram.js",
  "console-limits.js",
] as const;

/** The console's style sheets, linked by the page in this order (each adds to the one before). */
export const CONSOLE_STYLESHEETS = ["console.css", "console-list.css", "console-task.css"] as const;

/**
 * The console's files, read once at start (a missing file fails the start, not the first visitor). The page
 * and its code hold no data, so they are served without credentials; the API they call is not.
 */
export function addConsoleAssetRoutes(router: HttpRouter): void {
  const assets = new Map<string, Asset>([
    ...CONSOLE_SCRIPTS.map((name): [string, Asset] => [
      name,
      { body: readFileSync(join(assetsDir, name)), type: "text/javascript; charset=utf-8" },
    ]),
    ...CONSOLE_STYLESHEETS.map((name): [string, Asset] => [
      name,
      { body: readFileSync(join(assetsDir, name)), type: "text/css; charset=utf-8" },
    ]),
    ["dagre.esm.js", { body: readFileSync(dagrePath()), type: "text/javascript; charset=utf-8" }],
    ["favicon.svg", { body: readFileSync(join(assetsDir, "favicon.svg")), type: "image/svg+xml" }],
  ]);
  const favicon: Asset = { body: readFileSync(join(assetsDir, "favicon.ico")), type: "image/x-icon" };
  const page: Asset = { body: readFileSync(join(assetsDir, "index.html")), type: "text/html; charset=utf-8" };
  const send = (asset: Asset) => async (_req: unknown, res: HttpResponse) => {
    res.writeHead(200, {
      "content-type": asset.type,
      "content-length": String(asset.body.length),
      "cache-control": "no-cache",
      ...SECURITY_HEADERS,
    });
    res.end(asset.body);
  };
  router.add("GET", "/console", send(page));
  router.add("GET", "/console/", send(page));
  // A deep link to one task: the same page, which reads the id from the path.
  router.add("GET", "/console/tasks/{taskId}", send(page));
  // The tenants' limits, usage and refusals.
  router.add("GET", "/console/limits", send(page));
  for (const [name, asset] of assets) router.add("GET", `/console/assets/${name}`, send(asset));
  // Browsers ask for /favicon.ico on their own (any page of the host, and the console before its <link> is read).
  router.add("GET", "/favicon.ico", send(favicon));
}

/** The paths served without credentials (the app's list of public paths takes this pattern). */
export const CONSOLE_PUBLIC_PATH = /^\/(console(\/|\/assets\/[a-z.-]+|\/tasks\/[^/]+|\/limits)?|favicon\.ico)$/;
