// The CLI's small parts on their own: the arguments, "did you mean", the variable-name check and the readable
// log line. The CLI end to end: test/integration/cli.test.ts.
import { describe, expect, it } from "vitest";
import { parseCliArgs } from "../../src/cli/cli-args.js";
import { checkVariableNames, knownVariables } from "../../src/config/known-variables.js";
import { closestName, editDistance } from "../../src/domain/closest-name.js";
import { readableLine } from "../../src/observability/readable-log.js";

describe("parseCliArgs", () => {
  it("reads the commands; --help and --version win anywhere; anything else is a usage problem", () => {
    expect(parseCliArgs([])).toEqual({ kind: "start" });
    expect(parseCliArgs(["start"])).toEqual({ kind: "start" });
    expect(parseCliArgs(["check"])).toEqual({ kind: "check" });
    for (const args of [["--help"], ["-h"], ["help"], ["check", "--help"]])
      expect(parseCliArgs(args)).toEqual({ kind: "help" });
    for (const args of [["--version"], ["-v"], ["version"]]) expect(parseCliArgs(args)).toEqual({ kind: "version" });
    expect(parseCliArgs(["chek"])).toEqual({
      kind: "usage",
      problem: 'unknown command "chek" (did you mean "check"?)',
    });
    expect(parseCliArgs(["--port=8080"])).toEqual({ kind: "usage", problem: 'unknown command "--port=8080"' });
    expect(parseCliArgs(["init"])).toEqual({ kind: "init", dir: "." });
    expect(parseCliArgs(["init", "my-agent"])).toEqual({ kind: "init", dir: "my-agent" });
    expect(parseCliArgs(["init", "a", "b"])).toEqual({
      kind: "usage",
      problem: '"init" takes one folder and no options (got "a" "b")',
    });
    expect(parseCliArgs(["init", "--force"])).toEqual({
      kind: "usage",
      problem: '"init" takes one folder and no options (got "--force")',
    });
    expect(parseCliArgs(["init", "-h"])).toEqual({ kind: "help" });
    expect(parseCliArgs(["keys"])).toEqual({ kind: "keys", format: "env" });
    expect(parseCliArgs(["keys", "--format", "kubernetes"])).toEqual({ kind: "keys", format: "kubernetes" });
    expect(parseCliArgs(["keys", "--format=env"])).toEqual({ kind: "keys", format: "env" });
    expect(parseCliArgs(["keys", "--format", "helm"])).toEqual({
      kind: "usage",
      problem: '"keys" takes --format env or kubernetes and nothing else (got "--format" "helm")',
    });
    expect(parseCliArgs(["keys", "--format"])).toEqual({
      kind: "usage",
      problem: '"keys" takes --format env or kubernetes and nothing else (got "--format")',
    });
    expect(parseCliArgs(["check", "now"])).toEqual({
      kind: "usage",
      problem: '"check" takes no arguments (got "now"); settings come from the environment (docs/configuration.md)',
    });
  });
});

describe("parseCliArgs: evidence", () => {
  it("reads evidence run and evidence verify with their options; anything else is a usage problem naming it", () => {
    expect(parseCliArgs(["evidence", "run", "--out", "b.json", "--instances=4", "--build", "commit:abc"])).toEqual({
      kind: "evidence-run",
      options: { "--out": "b.json", "--instances": "4", "--build": "commit:abc" },
    });
    expect(parseCliArgs(["evidence", "verify", "b.json", "--discovery", "https://h/.well-known/openwop"])).toEqual({
      kind: "evidence-verify",
      file: "b.json",
      discovery: "https://h/.well-known/openwop",
    });
    expect(parseCliArgs(["evidence", "verify", "b.json"])).toEqual({ kind: "evidence-verify", file: "b.json" });
    const problem = (argv: string[]) => {
      const parsed = parseCliArgs(argv);
      return parsed.kind === "usage" ? parsed.problem : undefined;
    };
    expect(problem(["evidence"])).toBe('"evidence" takes "run" or "verify" (got nothing)');
    expect(problem(["evidence", "sign"])).toBe('"evidence" takes "run" or "verify" (got "sign")');
    expect(problem(["evidence", "run", "--out"])).toBe('"evidence run": --out needs a value');
    expect(problem(["evidence", "run", "--key", "k"])).toContain("(got --key)");
    expect(problem(["evidence", "verify"])).toContain("takes one bundle file");
    expect(problem(["evidence", "verify", "a.json", "b.json"])).toContain("takes one bundle file");
  });
});

describe("closestName", () => {
  it("suggests a name a typo away (a swap counts as one edit), never a far one or the name itself", () => {
    expect(editDistance("ecoh", "echo")).toBe(1);
    expect(editDistance("PUSH_ENABLE", "PUSH_ENABLED")).toBe(1);
    expect(closestName("score-led", ["score-lead", "echo"])).toBe("score-lead");
    expect(closestName("biling", ["billing", "shipping"])).toBe("billing");
    expect(closestName("shop", ["echo", "noop"])).toBeUndefined();
    expect(closestName("echo", ["echo"])).toBeUndefined();
  });
});

describe("checkVariableNames", () => {
  const known = new Set(["PUSH_ENABLED", "PUSH_SIGNING_KEY", "PORT", "HOST", "OTEL_*"]);

  it("the process environment: only a name with one of our prefixes and a typo away is flagged (a warning)", () => {
    const env = {
      PUSH_ENABLE: "false",
      PATH: "/bin",
      HOSTNAME: "box",
      PORTS: "1",
      NODE_OPTIONS: "",
      OTEL_SERVICE_NAME: "x",
      SCORER_URL: "https://s",
      PUSH_SIGNNG_KEY: "k",
    };
    expect(checkVariableNames(env, undefined, ["SCORER_URL"], known)).toEqual({
      warnings: [
        { variable: "PUSH_ENABLE", suggestion: "PUSH_ENABLED" },
        { variable: "PUSH_SIGNNG_KEY", suggestion: "PUSH_SIGNING_KEY" },
      ],
      problems: [],
    });
  });

  it("a name one word away from one we read is flagged whatever the word (issue 40: the first word too)", () => {
    const ours = new Set(["WORKFLOWS_DIR", "HANDLERS_MODULE", "MONGODB_URI", "MONGODB_DB", "NODE_ENV", "LOG_LEVEL"]);
    const env = {
      WORKFLOW_DIR: "./workflows",
      HANDLER_MODULE: "./handlers.ts",
      MONGO_URI: "mongodb://db",
      NODE_VERSION: "20.19.0",
      MONGO_URL: "two words away",
      LOG_FORMAT: "json",
    };
    expect(checkVariableNames(env, undefined, [], ours).warnings).toEqual([
      { variable: "WORKFLOW_DIR", suggestion: "WORKFLOWS_DIR" },
      { variable: "HANDLER_MODULE", suggestion: "HANDLERS_MODULE" },
      { variable: "MONGO_URI", suggestion: "MONGODB_URI" },
    ]);
  });

  it("startHost's env: any name not read is a problem (WORKFLOW_VARIABLES names and library variables are read)", () => {
    expect(
      checkVariableNames(
        {},
        {
          PUSH_ENABLE: "false",
          PORT: "1",
          SCORER_URL: "x",
          OTEL_SERVICE_NAME: "s",
          MONGOMS_DOWNLOAD_URL: "u",
          FOO: "1",
        },
        ["SCORER_URL"],
        known,
      ).problems,
    ).toEqual([
      "option env.PUSH_ENABLE: not a variable openwop-a2a-host reads (did you mean PUSH_ENABLED? see docs/configuration.md)",
      "option env.FOO: not a variable openwop-a2a-host reads (see docs/configuration.md)",
    ]);
  });

  it("reads its list from docs/configuration.md", () => {
    const names = knownVariables();
    expect(names?.has("PUSH_ENABLED")).toBe(true);
    expect(names?.has("HANDLERS_MODULE")).toBe(true);
  });
});

describe("readableLine", () => {
  it("one line: time, level, message, the other fields as key=value; a failed start's reason follows, indented", () => {
    const time = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect(
      readableLine(
        JSON.stringify({
          level: 40,
          time,
          service: "openwop-a2a-host",
          instanceId: "i-1",
          msg: "PUSH_ENABLE is set",
          event: "config.unknown_variable",
          variable: "PUSH_ENABLE",
          n: 2,
          tags: ["a"],
        }),
      ),
    ).toBe('03:04:05 WARN  PUSH_ENABLE is set event=config.unknown_variable variable=PUSH_ENABLE n=2 tags=["a"]\n');
    expect(
      readableLine(
        JSON.stringify({
          level: 60,
          time,
          msg: "workflow error",
          event: "config.invalid",
          reason: "2 workflow problems:\n- a\n- b",
          problems: ["a", "b"],
        }),
      ),
    ).toBe("03:04:05 FATAL workflow error event=config.invalid\n    2 workflow problems:\n    - a\n    - b\n");
    expect(readableLine("not json")).toBe("not json\n");
  });
});
