import type { AuthDescription, Authenticator } from "./authenticator.js";
import type { Principal } from "./principal.js";

/** Dev mode (AUTH=off): every caller acts as this principal in the default tenant. */
export const DEV_PRINCIPAL: Principal = { tenant: "default", id: "anonymous", scopes: "*" };

const DESCRIPTION: AuthDescription = {
  enabled: false,
  schemes: {},
  requirements: [],
  tenants: ["default"],
  allTenantsHolders: [],
  summary: "off (dev: every caller is the default tenant)",
};

/** Dev mode: recognises every request, credentials or not, and answers the dev principal. */
export const devAuthenticator: Authenticator = {
  recognises: () => true,
  authenticate: () => DEV_PRINCIPAL,
  describe: () => DESCRIPTION,
};
