/**
 * A 256-bit key as configured (PUSH_ENCRYPTION_KEY, A2A_PEER_CALLBACK_KEY): 64 hex characters, or 32 bytes in
 * base64/base64url. Undefined when the text is neither (callers report it by the variable's name, never the value).
 */
export function parseKey256(raw: string): Buffer | undefined {
  const text = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, "hex");
  else if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(text))
    key = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  return key?.length === 32 ? key : undefined;
}

/** What a refused 256-bit key setting says (the fix, with a command that makes one). */
export function key256Problem(name: string): string {
  return `${name} must be a 256-bit key: 64 hex characters or 32 bytes in base64 (e.g. \`openssl rand -base64 32\`)`;
}
