import { describe, expect, it } from "vitest";
import { selectorsOf, withGrafanaVariables } from "../support/promql-selectors.js";
import { missingFor } from "../support/queried-metrics.js";
import { parsePrometheusText } from "../support/prometheus-text.js";

describe("selectorsOf (the metrics a PromQL expression reads)", () => {
  it("finds each selector with its matchers and the labels enclosing aggregations group it by", () => {
    const expr =
      'histogram_quantile(0.99, sum by (le, binding) (rate(openwop_request_duration_seconds_bucket{method!~"GET /metrics|.*[Ss]end.*", instance=~".*"}[5m]))) > 1 and on() absent(openwop_ready)';
    expect(() => selectorsOf(expr)).toThrow(/On/);
    expect(selectorsOf(expr.replace(" and on() ", " or "))).toEqual([
      {
        metric: "openwop_request_duration_seconds_bucket",
        matchers: [
          { label: "method", op: "!~", value: "GET /metrics|.*[Ss]end.*" },
          { label: "instance", op: "=~", value: ".*" },
        ],
        groupedBy: ["le", "binding"],
      },
      { metric: "openwop_ready", matchers: [], groupedBy: [] },
    ]);
  });

  it("reads escapes in label values as Prometheus does", () => {
    expect(selectorsOf('x{a="\\\\w+ \\"q\\"", b=\'it\\\'s\', c=`raw\\d`}')[0]!.matchers.map((m) => m.value)).toEqual([
      '\\w+ "q"',
      "it's",
      "raw\\d",
    ]);
  });

  it("refuses what it cannot follow or read, rather than guessing", () => {
    expect(() => selectorsOf("sum without (binding) (x)")).toThrow(/Without/);
    expect(() => selectorsOf('label_replace(x, "a", "$1", "b", "(.*)")')).toThrow(/LabelReplace/);
    expect(() => selectorsOf('{__name__="x"}')).toThrow(/without a metric name/);
    expect(() => selectorsOf("sum(rate(x[5m])")).toThrow(/syntax error/);
  });

  it("fills Grafana's variables in as Prometheus would see them", () => {
    expect(withGrafanaVariables('rate(x{instance=~"$instance", job=~"${job}"}[$__rate_interval])')).toBe(
      'rate(x{instance=~".*", job=~".*"}[5m])',
    );
  });
});

describe("missingFor (what a scrape lacks for a selector)", () => {
  const samples = parsePrometheusText(
    ['openwop_push_dead_letters_total{reason="max-age",otel_scope_name="s"} 0', "openwop_ready 1"].join("\n"),
  );

  it("passes a selector whose metric, labels and exact values are there (target labels aside)", () => {
    expect(
      missingFor(
        selectorsOf('sum by (reason, instance) (openwop_push_dead_letters_total{reason="max-age", job="x"})')[0]!,
        samples,
      ),
    ).toEqual([]);
  });

  it("names a missing metric, a missing label and a missing exact value", () => {
    expect(missingFor(selectorsOf("openwop_lease_takeovers_total")[0]!, samples)).toEqual([
      "openwop_lease_takeovers_total: no such metric",
    ]);
    expect(missingFor(selectorsOf("sum by (tenant) (openwop_ready)")[0]!, samples)).toEqual([
      "openwop_ready: no series has the label tenant",
    ]);
    expect(missingFor(selectorsOf('openwop_push_dead_letters_total{reason="max-attempts"}')[0]!, samples)).toEqual([
      'openwop_push_dead_letters_total: no series with reason="max-attempts"',
    ]);
  });
});
