// rematch report, session page: the timeline's two view toggles and the strip of flagged records.
// It reads only numbers the page states (data-at), never text.
(function () {
  "use strict";
  [["only-flagged", "only-flagged"], ["hide-turns", "hide-turns"]].forEach(function (pair) {
    var box = document.getElementById(pair[0]);
    if (!box) { return; }
    box.addEventListener("change", function () { document.body.classList.toggle(pair[1], box.checked); });
  });
  // A link to a conversation entry (a search hit, a flag) whose session page has no such entry (the
  // transcript is gone, a prompt the trace did not match) lands on that record in the timeline instead.
  function toRecord() {
    var m = /^#conv-(\d+)$/.exec(location.hash);
    if (m && !document.getElementById("conv-" + m[1])) {
      var row = document.getElementById("seq-" + m[1]);
      if (row) { row.scrollIntoView(); }
    }
  }
  window.addEventListener("hashchange", toRecord);
  toRecord();
  // The strip of flagged records: each tick placed at its share of the session (CSSOM, which the CSP allows).
  document.querySelectorAll(".strip .tick").forEach(function (tick) {
    var at = parseFloat(tick.dataset.at);
    if (at >= 0 && at <= 1) { tick.style.left = (at * 100).toFixed(2) + "%"; }
  });
}());
