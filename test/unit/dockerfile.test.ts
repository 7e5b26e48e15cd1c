// The image cannot be built here (no Docker engine); what matters about it is checked in its Dockerfile: the
// runtime stage runs as a non-root user by number (Kubernetes' runAsNonRoot checks it), under tini, from the packed
// package, with the OCI labels and a HEALTHCHECK; and the release workflow builds both architectures on a tag.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";

/** The Dockerfile's instructions (continuation lines joined, comments dropped), split into stages at each FROM. */
async function stages(): Promise<string[][]> {
  const text = await readFile(join(projectRoot, "Dockerfile"), "utf8");
  const lines = text
    .split("\n")
    .filter((l) => !l.trimStart().startsWith("#"))
    .join("\n")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const out: string[][] = [[]];
  for (const line of lines) {
    if (line.startsWith("FROM ")) out.push([]);
    out.at(-1)!.push(line);
  }
  return out;
}

describe("Dockerfile", () => {
  it("runs the packed package as a numbered non-root user under tini, with a HEALTHCHECK", async () => {
    const runtime = (await stages()).at(-1)!;
    const user = runtime.filter((l) => l.startsWith("USER ")).at(-1);
    expect(user).toMatch(/^USER [1-9]\d*:[1-9]\d*$/);
    expect(runtime.some((l) => /^RUN .*apt-get install .*\btini\b/.test(l))).toBe(true);
    expect(runtime.find((l) => l.startsWith("ENTRYPOINT "))).toBe(
      'ENTRYPOINT ["/usr/bin/tini", "--", "openwop-a2a-host"]',
    );
    expect(runtime.find((l) => l.startsWith("HEALTHCHECK "))).toMatch(/\/healthz/);
    // The package as npm installs it, not the source tree: the tarball of `npm pack`.
    expect(runtime.some((l) => /^COPY --from=build \/pkg\/openwop-a2a-host\.tgz/.test(l))).toBe(true);
    expect(runtime.some((l) => /^COPY (src|\.) /.test(l))).toBe(false);
  });

  it("carries the OCI labels", async () => {
    const labels = (await stages())
      .at(-1)!
      .filter((l) => l.startsWith("LABEL "))
      .join(" ");
    for (const name of [
      "title",
      "description",
      "licenses",
      "source",
      "version",
      "revision",
      "created",
      "documentation",
    ]) {
      expect(labels, name).toContain(`org.opencontainers.image.${name}=`);
    }
  });

  it("builds on an LTS line of Node (an even major) in the version the manifests' user expects", async () => {
    const text = await readFile(join(projectRoot, "Dockerfile"), "utf8");
    const major = Number(/^ARG NODE_IMAGE=node:(\d+)-/m.exec(text)?.[1]);
    expect(major % 2).toBe(0);
    expect(major).toBeGreaterThanOrEqual(24);
    const deployment = parse(await readFile(join(projectRoot, "deploy/kubernetes/base/deployment.yaml"), "utf8")) as {
      spec: { template: { spec: { securityContext: { runAsUser: number; runAsGroup: number } } } };
    };
    const { runAsUser, runAsGroup } = deployment.spec.template.spec.securityContext;
    expect(
      (await stages())
        .at(-1)!
        .filter((l) => l.startsWith("USER "))
        .at(-1),
    ).toBe(`USER ${runAsUser}:${runAsGroup}`);
  });
});

describe(".github/workflows/release.yml", () => {
  it("on a version tag, builds for amd64 and arm64 and pushes to ghcr", async () => {
    const workflow = parse(await readFile(join(projectRoot, ".github/workflows/release.yml"), "utf8")) as {
      on: { push: { tags: string[] } };
      permissions: Record<string, string>;
      jobs: { image: { steps: Array<{ uses?: string; with?: Record<string, unknown> }> } };
    };
    expect(workflow.on.push.tags).toEqual(["v*.*.*"]);
    expect(workflow.permissions["packages"]).toBe("write");
    const push = workflow.jobs.image.steps.find(
      (s) => s.uses?.startsWith("docker/build-push-action") && s.with?.["push"] === true,
    );
    expect(String(push?.with?.["platforms"]).split(",").sort()).toEqual(["linux/amd64", "linux/arm64"]);
    const meta = workflow.jobs.image.steps.find((s) => s.uses?.startsWith("docker/metadata-action"));
    expect(meta?.with?.["images"]).toBe("ghcr.io/${{ github.repository_owner }}/openwop-a2a-host");
  });
});
