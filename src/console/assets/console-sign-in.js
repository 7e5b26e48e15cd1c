/* global document, fetch, URL */
// Sign-in through the host's identity provider: the header's links and the session's CSRF token.
import { setCsrfToken } from "./console-api.js";

/** Whether the host offers sign-in through its identity provider, and whether this browser is signed in. */
export async function loadSession() {
  const signInLink = document.getElementById("sign-in");
  const signedIn = document.getElementById("signed-in");
  const signOut = document.getElementById("sign-out");
  let session = { signIn: null, signedIn: false };
  try {
    const res = await fetch("/console/auth/session", { headers: { accept: "application/json" } });
    if (res.ok) session = await res.json();
  } catch {
    // An older host without the route: API keys only.
  }
  setCsrfToken(session.signedIn ? session.csrfToken : "");
  if (session.signIn) {
    signInLink.textContent = `Sign in with ${new URL(session.signIn.issuer).host}`;
    signInLink.href = session.signIn.loginUrl;
  }
  signInLink.hidden = !session.signIn || session.signedIn;
  signedIn.hidden = !session.signedIn;
  signedIn.textContent = session.signedIn ? `Signed in · tenant ${session.tenant}` : "";
  signOut.hidden = !session.signedIn;
}
