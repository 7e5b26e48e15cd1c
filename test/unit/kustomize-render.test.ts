// The Node renderer that stands in for `kubectl kustomize` where kubectl is missing (test/support/kustomize-render.ts):
// its name hashes against values kustomize (kubectl v1.32, kustomize v5.5) computed, its build of every overlay
// against kubectl's where kubectl is installed, and its refusal of what it does not implement.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../src/domain/project-root.js";
import {
  build,
  kubectlInstalled,
  kubectlKustomize,
  kustomizeBase64,
  kustomizeHash,
  type K8sObject,
} from "../support/kustomize-render.js";

const OVERLAYS = ["try", "production"].map((o) => join(projectRoot, "deploy", "kubernetes", "overlays", o));
const key = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;

describe("the Node kustomize renderer", () => {
  it("names generated objects with kustomize's hash (values from `kubectl kustomize`)", () => {
    expect(kustomizeHash({ kind: "ConfigMap", data: { a: "b" } })).toBe("4h2mbtbbt6");
    expect(kustomizeHash({ kind: "Secret", type: "Opaque", data: { a: kustomizeBase64("b") } })).toBe("k695gkmbtk");
    // Go's JSON escapes <, > and &; a value of 80 bytes is base64 in two lines.
    expect(kustomizeHash({ kind: "ConfigMap", data: { "f.txt": "a<b>&c\n" } })).toBe("bf84dtcdck");
    expect(kustomizeHash({ kind: "Secret", type: "Opaque", data: { k: kustomizeBase64("x".repeat(80)) } })).toBe(
      "mk688m8bbd",
    );
  });

  it.skipIf(!kubectlInstalled())("builds every overlay exactly as kubectl kustomize does", () => {
    for (const overlay of OVERLAYS) {
      const ours = build(overlay);
      const theirs = kubectlKustomize(overlay)!;
      expect(ours.map(key).sort(), overlay).toEqual(theirs.map(key).sort());
      for (const object of theirs) {
        const mine = ours.find((o) => key(o) === key(object));
        expect(
          isDeepStrictEqual(mine, object),
          `${overlay}: ${key(object)}\nkubectl: ${JSON.stringify(object)}\nours:    ${JSON.stringify(mine)}`,
        ).toBe(true);
      }
    }
  });

  it("refuses a kustomize feature it does not implement, and a JSON patch whose test fails", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kustomize-render-"));
    await writeFile(join(dir, "kustomization.yaml"), "resources: [cm.yaml]\nnamePrefix: x-\n");
    await writeFile(join(dir, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n");
    expect(() => build(dir)).toThrow(/uses namePrefix, which this renderer does not implement/);
    await writeFile(
      join(dir, "kustomization.yaml"),
      "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap, name: a}\n    patch: |-\n      - {op: test, path: /data/k, value: w}\n",
    );
    expect(() => build(dir)).toThrow(/test of \/data\/k failed/);
  });
});
