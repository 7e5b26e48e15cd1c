import type { Metrics } from "../observability/metrics.js";
import type { CommitBus } from "../store/commit-bus.js";

type CommitListeners = Pick<CommitBus, "onAny">;

/**
 * Counts the console's open task-list streams: each holds one listener on the commit bus for as long as it is
 * open, so the listeners the console registers are the streams. The gauge is there (at 0) with the console off too.
 */
export function consoleStreamCounter(metrics: Metrics): { counted(commits: CommitListeners): CommitListeners } {
  let open = 0;
  metrics.observe("consoleStreams", (report) => report(open));
  return {
    counted: (commits) => ({
      onAny(listener) {
        const off = commits.onAny(listener);
        open++;
        let closed = false;
        return () => {
          if (!closed) {
            closed = true;
            open--;
          }
          off();
        };
      },
    }),
  };
}
