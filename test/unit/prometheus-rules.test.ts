// The alert rules (deploy/prometheus/) through the real promtool: `check rules`, then `test rules` on the
// cases in openwop-alerts.test.yaml, which show each alert firing and not firing. .ci/run installs Debian's
// `prometheus` package for promtool (PROMTOOL names another binary); in CI (CI=true) a missing promtool fails
// here instead of skipping.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { headingAnchors, readRepoFile } from "../docs/markdown.js";
import { selectorsOf } from "../support/promql-selectors.js";
import { DEPLOY } from "../support/queried-metrics.js";

const RULES = join(DEPLOY, "prometheus", "openwop-alerts.yaml");
const CASES = join(DEPLOY, "prometheus", "openwop-alerts.test.yaml");
const promtool = process.env["PROMTOOL"] ?? "promtool";
const found = spawnSync(promtool, ["--version"], { encoding: "utf8" }).status === 0;
const inCi = process.env["CI"] === "true";

interface Rule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
}
const rules = (parse(readFileSync(RULES, "utf8")) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap(
  (g) => g.rules,
);

function run(...args: string[]): { status: number | null; output: string } {
  const result = spawnSync(promtool, args, { encoding: "utf8", timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("alert rules", () => {
  it("has promtool where it must (CI installs it)", () => {
    if (inCi) expect(found, `${promtool} not found: .ci/run installs Debian's prometheus package`).toBe(true);
  });

  it.skipIf(!found)("pass promtool check rules", () => {
    const { status, output } = run("check", "rules", RULES);
    expect(output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(status).toBe(0);
  });

  it.skipIf(!found)("pass their promtool unit tests", () => {
    const { status, output } = run("test", "rules", CASES);
    expect(output).toContain("SUCCESS");
    expect(status).toBe(0);
  });

  it.skipIf(!found)("are each seen by a test case: with an alert's metrics renamed, promtool test rules fails", () => {
    const cases = readFileSync(CASES, "utf8");
    for (const rule of rules) expect(cases, `no test case for ${rule.alert}`).toContain(`alertname: ${rule.alert}\n`);
    for (const rule of rules) {
      const dir = mkdtempSync(join(tmpdir(), "openwop-rules-"));
      scratch.push(dir);
      copyFileSync(CASES, join(dir, "openwop-alerts.test.yaml"));
      let text = readFileSync(RULES, "utf8");
      const exprAt = text.indexOf(rule.expr.split("\n")[0]!.trim());
      expect(exprAt, `${rule.alert}'s expression not found in the file`).toBeGreaterThan(-1);
      // Only this rule's own expression is renamed: the other alerts keep passing, so the failure is this one's.
      const metrics = [...new Set(selectorsOf(rule.expr).map((s) => s.metric))];
      let expr = text.slice(exprAt, text.indexOf("\n", exprAt));
      for (const metric of metrics) expr = expr.replaceAll(metric, `${metric}_renamed`);
      text = text.slice(0, exprAt) + expr + text.slice(text.indexOf("\n", exprAt));
      writeFileSync(join(dir, "openwop-alerts.yaml"), text);
      const { status, output } = run("test", "rules", join(dir, "openwop-alerts.test.yaml"));
      expect(status, `${rule.alert} with ${metrics.join(", ")} renamed still passed its cases`).not.toBe(0);
      expect(output).toContain(`alertname: ${rule.alert}`);
    }
  });

  it("each say what happened and point at a runbook section of docs/operating.md that exists", () => {
    const anchors = headingAnchors(readRepoFile("docs/operating.md"));
    for (const rule of rules) {
      expect(rule.annotations["summary"], rule.alert).toBeTruthy();
      expect(rule.annotations["description"], rule.alert).toBeTruthy();
      const runbook = /^docs\/operating\.md#(.+)$/.exec(rule.annotations["runbook_url"] ?? "");
      expect(runbook, `${rule.alert}: runbook_url`).not.toBeNull();
      expect(anchors.has(runbook![1]!), `${rule.alert}: no heading for #${runbook![1]} in docs/operating.md`).toBe(
        true,
      );
      expect(runbook![1]).toBe(rule.alert.toLowerCase());
    }
  });
});
