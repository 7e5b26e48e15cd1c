// Messages' parts and artifacts, as text (the task page's history and artifacts, an approval's review).
import { el } from "./console-dom.js";

export function partsView(parts) {
  return (parts ?? []).map((p) =>
    p.kind === "text"
      ? el("pre", {}, p.text)
      : p.kind === "data"
        ? el("pre", {}, JSON.stringify(p.data, null, 2))
        : el("pre", {}, `[file ${p.file?.name ?? ""}]`),
  );
}

export function artifactView(a) {
  return el(
    "div",
    { class: "message artifact", "data-artifact-id": a.artifactId },
    el("strong", {}, a.name ?? a.artifactId),
    " ",
    el("span", { class: "muted mono" }, a.artifactId),
    partsView(a.parts),
  );
}
