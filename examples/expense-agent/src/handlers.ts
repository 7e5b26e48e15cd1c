import { HandlerError, type TaskHandler } from "openwop-a2a-host";

/** Where the exchange rates come from: any service answering `GET /rates?from=EUR&to=USD` with `{"rate": 1.08}`. */
const ratesUrl = (): string => process.env["RATES_API_URL"] ?? "http://127.0.0.1:9090";

/** "120 EUR taxi" → the amount, the currency and what it was for. */
function parseExpense(text: string): { amount: number; currency: string; purpose: string } {
  const match = /^\s*(\d+(?:\.\d+)?)\s+([A-Za-z]{3})\s*(.*)$/.exec(text);
  if (!match)
    throw new HandlerError(
      "bad_expense",
      `expected "<amount> <currency> <purpose>", e.g. "120 EUR taxi"; got "${text}"`,
    );
  return { amount: Number(match[1]), currency: match[2]!.toUpperCase(), purpose: match[3] || "unspecified" };
}

/** Reads the rate from the rates API. A 4xx is the caller's mistake (no retry); anything else may be retried. */
const convertExpense: TaskHandler = async (ctx) => {
  const expense = parseExpense(ctx.input.text);
  const response = await fetch(`${ratesUrl()}/rates?from=${expense.currency}&to=USD`, { signal: ctx.signal });
  if (response.status >= 400 && response.status < 500)
    throw new HandlerError("unknown_currency", `the rates API does not know ${expense.currency}`);
  if (!response.ok) throw new HandlerError("rates_unavailable", `the rates API answered ${response.status}`, true);
  const { rate } = (await response.json()) as { rate: number };
  const usd = Math.round(expense.amount * rate * 100) / 100;
  return {
    output: { ...expense, rate, usd },
    artifacts: [
      {
        name: "expense",
        parts: [{ kind: "text", text: `${expense.amount} ${expense.currency} (${usd} USD) for ${expense.purpose}` }],
      },
    ],
  };
};

/** Files the approved expense. The idempotency key is the same if this runs again after a crash. */
const fileExpense: TaskHandler = async (ctx) => {
  const converted = ctx.outputs["convert"] as { usd: number; purpose: string };
  return {
    output: { reference: `EXP-${ctx.idempotencyKey.slice(0, 8)}` },
    artifacts: [
      {
        name: "receipt",
        parts: [{ kind: "data", data: { filed: true, usd: converted.usd, purpose: converted.purpose } }],
      },
    ],
  };
};
// Its effect stays inside this host, so the engine may write its start together with what came before.
fileExpense.pure = true;

export const handlers = { "convert-expense": convertExpense, "file-expense": fileExpense };
