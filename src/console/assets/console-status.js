/* global document, setTimeout, clearTimeout */
// The page's status: the live indicator in the header and the error line under the view.

const errorBox = document.getElementById("error");
const liveDot = document.getElementById("live");

/**
 * The indicator in the header says what the page's live stream is doing, in words (its title says more):
 * "live" while updates arrive; "ended" when a task finished and its stream closed, as it does after the
 * last event (nothing is wrong: no more updates will come); "disconnected" when the stream failed.
 */
const LIVE = {
  live: ["● live", "Live: changes appear as they happen."],
  ended: [
    "● ended",
    "This task has finished: its event stream closed after the last event, so no more updates will come.",
  ],
  lost: ["● disconnected", "Live updates stopped: the stream to the host failed. Reload the page to reconnect."],
};
export function setLive(state, detail) {
  const [text, title] = LIVE[state];
  liveDot.textContent = text;
  liveDot.title = detail ? `${title} (${detail})` : title;
  liveDot.className = `live ${state}`;
  liveDot.dataset.live = state;
}

let errorTimer;
export function showError(err) {
  if (err?.name === "AbortError") return;
  errorBox.textContent = String(err?.message ?? err);
  errorBox.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(clearError, 8000);
}

/** A new view (another key, a sign-in, a navigation) starts without the previous one's error. */
export function clearError() {
  clearTimeout(errorTimer);
  errorBox.hidden = true;
  errorBox.textContent = "";
}

/** A live stream that failed: said by the indicator and the error line (unless the view changed and stopped it). */
export function streamFailed(err) {
  if (err?.name === "AbortError") return; // the view changed
  setLive("lost", String(err?.message ?? err));
  showError(err);
}
