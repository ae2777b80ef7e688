// rematch report, index page: the sessions table grouped by project, each main session's subagents,
// sidechains and compaction runs folded under it (one <tbody class="tree"> per main session, built by
// report/build.py). index.js calls window.rematchTree() after each filtering. Text reaches the page
// through textContent only.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var info = {};
  data.sessions.forEach(function (s) { info[s.k] = s; });
  var open = {};
  var trees = Array.prototype.slice.call(document.querySelectorAll("#sessions tbody.tree"));
  var buttons = {};

  function label(button, n, expanded) {
    button.textContent = (expanded ? "\u25be " : "\u25b8 ") + n + " under it";
    button.setAttribute("aria-expanded", expanded ? "true" : "false");
  }

  trees.forEach(function (tb) {
    var trs = tb.querySelectorAll("tr[data-k]");
    if (!trs.length) { return; }
    Array.prototype.forEach.call(trs, function (tr, i) {
      if (i > 0) { tr.classList.add("child", "folded"); }
      var s = info[tr.dataset.k];
      var sid = tr.querySelector(".sid");
      if (s && s.o && sid) {
        var mark = document.createElement("span");
        mark.className = "orphan";
        mark.textContent = "orphan: parent not imported";
        sid.appendChild(mark);
      }
    });
    if (trs.length > 1) {
      var g = tb.dataset.g;
      var b = document.createElement("button");
      b.type = "button";
      b.className = "fold";
      label(b, trs.length - 1, false);
      b.addEventListener("click", function () { open[g] = !open[g]; refresh(); });
      buttons[g] = b;
      trs[0].querySelector("td").appendChild(b);
    }
  });

  function refresh() {
    var visible = false;
    var heading = null;
    function close() { if (heading) { heading.hidden = !visible; } }
    Array.prototype.forEach.call(document.querySelectorAll("#sessions tbody"), function (tb) {
      if (tb.classList.contains("project")) {
        close();
        heading = tb;
        visible = false;
        return;
      }
      var trs = tb.querySelectorAll("tr[data-k]");
      var g = tb.dataset.g;
      for (var i = 1; i < trs.length; i++) { trs[i].classList.toggle("folded", !open[g]); }
      if (buttons[g]) { label(buttons[g], trs.length - 1, !!open[g]); }
      if (trs.length && !trs[0].classList.contains("hidden-by-filter")) { visible = true; }
    });
    close();
  }

  window.rematchTree = refresh;
  refresh();
}());
