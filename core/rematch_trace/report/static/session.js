// rematch report, session page: the timeline's two view toggles. No data is read from the page.
(function () {
  "use strict";
  [["only-flagged", "only-flagged"], ["hide-turns", "hide-turns"]].forEach(function (pair) {
    var box = document.getElementById(pair[0]);
    if (!box) { return; }
    box.addEventListener("change", function () { document.body.classList.toggle(pair[1], box.checked); });
  });
}());
