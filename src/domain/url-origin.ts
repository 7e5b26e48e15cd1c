/**
 * Scheme, host and port only: a URL's path, query and userinfo may hold secrets. A URL may still be a
 * ${VARIABLE} reference here (an http node's WORKFLOW_VARIABLES are resolved only when it runs; an a2a.invoke
 * variable that is not configured stays as written): then the reference itself, up to the path, which names
 * the setting and not its value.
 */
export function originOf(url: string): string {
  if (url.includes("${")) {
    // Before the URL parser, which would take (and lower-case) a reference for a host name.
    const authority = /^(?:[a-z][a-z0-9+.-]*:\/\/)?[^/?#]*/i.exec(url)?.[0] ?? url;
    return authority.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^@/]*@/i, "$1");
  }
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid URL)";
  }
}
