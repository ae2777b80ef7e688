// rematch report, session page: the timeline's two view toggles and the strip of flagged records.
// It reads only numbers the page states (data-at), never text.
(function () {
  "use strict";
  [["only-flagged", "only-flagged"], ["hide-turns", "hide-turns"]].forEach(function (pair) {
    var box = document.getElementById(pair[0]);
    if (!box) { return; }
    box.addEventListener("change", function () { document.body.classList.toggle(pair[1], box.checked); });
  });
  // The strip of flagged records: each tick placed at its share of the session (CSSOM, which the CSP allows).
  document.querySelectorAll(".strip .tick").forEach(function (tick) {
    var at = parseFloat(tick.dataset.at);
    if (at >= 0 && at <= 1) { tick.style.left = (at * 100).toFixed(2) + "%"; }
  });
}());
