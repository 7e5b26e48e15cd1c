import { canonicalJson } from "../domain/canonical-json.js";

/** A2A 1.0 `AgentCardSignature`: a JWS in JSON serialization with the payload detached (the card itself). */
export interface AgentCardSignature {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/** Signs bytes with the host's current key (the key ring's detached JWS; `jku` names where its JWKS is). */
export type DetachedSigner = (payload: Uint8Array) => Promise<{ protected: string; signature: string }>;

/**
 * What an agent card's signature covers (A2A 1.0 "Agent Card Signing"): the RFC 8785 canonical JSON of the card
 * as served, without `signatures`. Our canonicalJson sorts keys by UTF-16 code units and writes strings and
 * numbers as JSON.stringify does, which is RFC 8785 for a card's values (strings, booleans, no floats).
 */
export function cardSigningInput(document: Record<string, unknown>): Uint8Array {
  const { signatures: _signatures, ...unsigned } = document;
  return new TextEncoder().encode(canonicalJson(unsigned));
}

/** The card document with its `signatures`: one, by the host's current key. */
export async function signCardDocument(
  document: Record<string, unknown>,
  sign: DetachedSigner,
): Promise<Record<string, unknown>> {
  const signature: AgentCardSignature = await sign(cardSigningInput(document));
  return { ...document, signatures: [signature] };
}
