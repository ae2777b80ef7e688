// rematch report, session page: the timeline's two view toggles, the strip of flagged records, and the long
// sections kept in the page's own folder (report/render.py Parts), loaded when first unfolded.
// It reads only numbers and names the page states, never runs text: a section is HTML the build escaped,
// parsed into a <template> (no script in it runs; the CSP allows no inline script or handler either).
(function () {
  "use strict";
  [["only-flagged", "only-flagged"], ["hide-turns", "hide-turns"]].forEach(function (pair) {
    var box = document.getElementById(pair[0]);
    if (!box) { return; }
    box.addEventListener("change", function () { document.body.classList.toggle(pair[1], box.checked); });
  });

  // The chunks: a <script src> each (fetch() of a sibling file is refused on file://), which calls
  // rematchPart(name, base64 of the deflated JSON list of its sections).
  var map = document.getElementById("parts");
  var names = map ? JSON.parse(map.textContent) : [];
  var dir = map ? map.dataset.dir : "";
  var loading = {};
  var arrived = {};
  window.rematchPart = function (name, packed) {
    if (arrived[name]) { arrived[name](packed); }
  };
  function inflate(packed) {
    var bin = atob(packed);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }
  function chunk(c) {
    var name = names[c];
    if (typeof name !== "string" || !/^[0-9a-f]+\.js$/.test(name)) { return Promise.reject(new Error("no such chunk")); }
    if (!loading[name]) {
      loading[name] = new Promise(function (resolve, reject) {
        arrived[name] = resolve;
        var s = document.createElement("script");
        s.src = dir + name;
        s.onerror = function () { reject(new Error("could not load " + name)); };
        document.head.appendChild(s);
      }).then(inflate);
    }
    return loading[name];
  }
  function fill(el) {
    if (el.dataset.state) { return Promise.resolve(); }
    el.dataset.state = "loading";
    el.textContent = "loading…";
    return chunk(+el.dataset.c).then(function (sections) {
      var t = document.createElement("template");
      t.innerHTML = String(sections[+el.dataset.i]);
      el.textContent = "";
      el.appendChild(t.content);
      el.dataset.state = "done";
    }, function (err) {
      el.textContent = "This section could not be loaded (" + err.message + "): its file is missing from " +
        "the page's folder; build the report again.";
      el.dataset.state = "failed";
    });
  }
  function fillOpen(details) {
    var jobs = [];
    for (var k = 0; k < details.children.length; k++) {
      var el = details.children[k];
      if (el.classList.contains("lazy")) { jobs.push(fill(el)); }
    }
    return Promise.all(jobs);
  }
  // toggle does not bubble: caught on its way down.
  document.addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (d.tagName === "DETAILS" && d.open) { fillOpen(d); }
  }, true);

  // A link to a timeline record (#seq-N) opens the timeline first; a link to a conversation entry (a
  // search hit, a flag) whose page has no such entry (the transcript is gone, a prompt the trace did not
  // match) lands on that record in the timeline instead.
  // A link to a conversation entry (a search hit, a flag) unfolds the entry's long texts, where the words
  // found may be.
  function toRecord() {
    var m = /^#(conv|seq)-(\d+)$/.exec(location.hash);
    var here = m && document.getElementById(location.hash.slice(1));
    if (here && m[1] === "conv") {
      here.querySelectorAll(":scope > details.fold, :scope > .io > details.fold").forEach(function (d) { d.open = true; });
    }
    if (!m || here) { return; }
    var seq = m[2];
    var fold = document.getElementById("timeline-fold");
    if (!fold) { return; }
    fold.open = true;
    fillOpen(fold).then(function () {
      var row = document.getElementById("seq-" + seq);
      if (row) { row.scrollIntoView(); }
    });
  }
  window.addEventListener("hashchange", toRecord);
  toRecord();
  // The strip of flagged records: each tick placed at its share of the session (CSSOM, which the CSP allows).
  document.querySelectorAll(".strip .tick").forEach(function (tick) {
    var at = parseFloat(tick.dataset.at);
    if (at >= 0 && at <= 1) { tick.style.left = (at * 100).toFixed(2) + "%"; }
  });
}());
