import { describe, expect, it } from "vitest";
import {
  claimableRung,
  deriveRung,
  rowId,
  SINGLE_INSTANCE_ROWS,
  type RequirementRow,
} from "../../src/domain/evidence-bundle.js";

// deriveRung: the rung re-derived from the signed rows. RFC 0158 (openwop/openwop 1a06f6f) names five rows for
// `durable-single-instance`; every one must be `executed-pass`, and `peer-resume` lifts it to multi-instance.

const bound = {
  class: "task-execution-lease",
  bound: 1_800,
  terms: [
    { name: "leaseTtlMs", ms: 1_500 },
    { name: "leaseHeartbeatMs", ms: 300 },
  ],
};
const recovery = { class: "task-execution-lease", boundMs: 1_800, observedMs: 1_500 };
const row = (scenario: string, extra: Partial<RequirementRow> = {}): RequirementRow => ({
  id: rowId(scenario),
  scenario: `durability/${scenario}`,
  result: "executed-pass",
  ...extra,
});
const witnessed = (): RequirementRow[] => [
  row("bound-is-derived", { evidence: { recoveryBounds: [bound] } }),
  row("kill-after-accept", { evidence: { recovery } }),
  row("kill-during-execution", { evidence: { recovery } }),
  row("peer-resume", { detail: "accepted-by=boot-a resumed-by=boot-b survivors-answered=4/4" }),
  row("duplicate-delivery"),
  row("poison-exhaustion", { detail: "attempts=3 (RECOVERY_MAX_ATTEMPTS)" }),
];
const without = (scenario: string) => witnessed().filter((r) => r.id !== rowId(scenario));
const replaced = (scenario: string, change: Partial<RequirementRow>) =>
  witnessed().map((r) => (r.id === rowId(scenario) ? { ...r, ...change } : r));

describe("claimableRung", () => {
  it("caps a claim at durable-single-instance, the rung the bundle schema revision read can re-derive", () => {
    expect(claimableRung("durable-multi-instance")).toBe("durable-single-instance");
    expect(claimableRung("durable-single-instance")).toBe("durable-single-instance");
    expect(claimableRung(undefined)).toBeUndefined();
  });
});

describe("deriveRung", () => {
  it("derives durable-multi-instance from the five rows of the lower rung and a peer-resume naming two processes", () => {
    expect(SINGLE_INSTANCE_ROWS).toEqual([
      "bound-is-derived",
      "kill-after-accept",
      "kill-during-execution",
      "duplicate-delivery",
      "poison-exhaustion",
    ]);
    expect(deriveRung(witnessed())).toEqual({ rung: "durable-multi-instance", problems: [] });
    expect(deriveRung(replaced("peer-resume", { detail: "accepted-by=boot-a resumed-by=boot-a" })).rung).toBe(
      "durable-single-instance",
    );
  });

  it("derives no rung when poison-exhaustion is missing, skipped, blocked or failed", () => {
    const poison = rowId("poison-exhaustion");
    expect(deriveRung(without("poison-exhaustion"))).toEqual({
      problems: [`${poison} is missing; the rung needs it passed`],
    });
    for (const result of ["skipped", "blocked", "executed-fail", "inapplicable"] as const)
      expect(deriveRung(replaced("poison-exhaustion", { result }))).toEqual({
        problems: [`${poison} is ${result}; the rung needs it passed`],
      });
  });

  it("derives no rung without a passed duplicate-delivery, and names every missing row at once", () => {
    expect(deriveRung(replaced("duplicate-delivery", { result: "blocked" })).problems).toEqual([
      `${rowId("duplicate-delivery")} is blocked; the rung needs it passed`,
    ]);
    expect(deriveRung([]).problems).toEqual(
      SINGLE_INSTANCE_ROWS.map((name) => `${rowId(name)} is missing; the rung needs it passed`),
    );
  });

  it("keeps the evidence checks: terms that do not sum, a late resumption, a mislabelled bound, an undeclared class", () => {
    const wrongSum = replaced("bound-is-derived", { evidence: { recoveryBounds: [{ ...bound, bound: 2_000 }] } });
    expect(deriveRung(wrongSum).problems).toContain(
      'recovery class "task-execution-lease" declares 2000 ms but its terms sum to 1800 ms',
    );
    const late = replaced("kill-during-execution", { evidence: { recovery: { ...recovery, observedMs: 1_900 } } });
    expect(deriveRung(late)).toEqual({
      problems: [`${rowId("kill-during-execution")} resumed after 1900 ms, beyond its 1800 ms bound`],
    });
    const mislabelled = replaced("kill-during-execution", {
      evidence: { recovery: { ...recovery, boundMs: 60_000 } },
    });
    expect(deriveRung(mislabelled).problems).toEqual([
      `${rowId("kill-during-execution")} was judged against 60000 ms, but class "task-execution-lease" declares 1800 ms`,
    ]);
    const other = replaced("kill-after-accept", { evidence: { recovery: { ...recovery, class: "other" } } });
    expect(deriveRung(other).problems).toEqual([
      `${rowId("kill-after-accept")} names recovery class "other", which no bound declares`,
    ]);
    expect(deriveRung(replaced("kill-after-accept", { evidence: {} })).problems).toEqual([
      `${rowId("kill-after-accept")} carries no evidence.recovery`,
    ]);
  });
});
