// rematch report, index page: filters the session table and draws the per-day charts.
// Data comes from the JSON block #report-data; every string from it reaches the page
// through textContent or new Option(), never as markup.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  // The sessions table's sticky header sits just under the page's sticky bar, whatever its height.
  var bar = document.querySelector("header.top");
  if (bar) { document.documentElement.style.setProperty("--bar", bar.offsetHeight + "px"); }
  var sessions = data.sessions;
  var rows = {};
  document.querySelectorAll("#sessions tbody tr[data-k]").forEach(function (tr) { rows[tr.dataset.k] = tr; });
  var selects = Array.prototype.slice.call(document.querySelectorAll("#filters select"));
  var search = document.getElementById("f-q");
  var charts = {};
  var MAX_GROUPS = 8;
  var PALETTE = ["#4f46e5", "#d97757", "#10a37f", "#2563eb", "#db2777", "#ca8a04", "#0891b2", "#7c3aed",
                 "#65a30d", "#ea580c", "#475569", "#be123c"];

  // A value with hidden characters (bidi controls, zero-width or tag characters) is labelled with them
  // escaped, as the report's text shows them; the value itself stays exact, for matching.
  var labels = data.labels || {};
  function label(v) { return Object.prototype.hasOwnProperty.call(labels, v) ? labels[v] : v; }

  function distinct(key) {
    var seen = {};
    sessions.forEach(function (s) { if (s[key]) { seen[s[key]] = true; } });
    return Object.keys(seen).sort();
  }
  selects.forEach(function (sel) {
    if (sel.dataset.key === "f") { return; }
    distinct(sel.dataset.key).forEach(function (v) { sel.appendChild(new Option(label(v), v)); });
  });

  function matches(s, text) {
    for (var i = 0; i < selects.length; i++) {
      var key = selects[i].dataset.key, want = selects[i].value;
      if (!want) { continue; }
      if (key === "f") {
        if (want === "-" && s.f.length === 0) { return false; }
        if (want === "+" && s.f.length > 0) { return false; }
        if (want !== "-" && want !== "+" && s.f.indexOf(want) < 0) { return false; }
      } else if (s[key] !== want) { return false; }
    }
    if (text) {
      var tr = rows[s.k];
      if (!tr || tr.textContent.toLowerCase().indexOf(text) < 0) { return false; }
    }
    return true;
  }

  function fmtTokens(n) {
    if (n >= 1e6) { return (n / 1e6).toFixed(2) + "M"; }
    if (n >= 1e4) { return (n / 1e3).toFixed(1) + "k"; }
    return n.toLocaleString("en-US");
  }

  function row(name) {
    return { name: name, sessions: 0, inputs: 0, redirects: 0, clusters: 0, turns: 0, tokens: 0, cost: 0, priced: 0 };
  }

  // Every day from the first to the last, those without a session included (as zero), so a gap shows.
  function everyDay(days) {
    var known = Object.keys(days).filter(function (d) { return /^\d{4}-\d{2}-\d{2}$/.test(d); }).sort();
    var out = [];
    if (known.length) {
      var t = Date.parse(known[0] + "T00:00:00Z"), end = Date.parse(known[known.length - 1] + "T00:00:00Z");
      for (; t <= end; t += 86400000) { out.push(new Date(t).toISOString().slice(0, 10)); }
    }
    // Anything not a date ("unknown") comes after the dates.
    Object.keys(days).sort().forEach(function (d) { if (!/^\d{4}-\d{2}-\d{2}$/.test(d)) { out.push(d); } });
    return out;
  }

  // Over a long span a bar a day is a flat line with spikes: past PER_WEEK days the charts add up weeks
  // (each labelled by its Monday), past PER_MONTH days months. Integer sums, so nothing is rounded.
  var PER_WEEK = 180, PER_MONTH = 2 * 366;
  function bucketOf(d, per) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(d)) { return d; }
    if (per === "month") { return d.slice(0, 7); }
    var t = Date.parse(d + "T00:00:00Z");
    return new Date(t - ((new Date(t).getUTCDay() + 6) % 7) * 86400000).toISOString().slice(0, 10);
  }
  function buckets(labels, days, per) {
    var out = {}, order = [];
    labels.forEach(function (d) {
      var b = bucketOf(d, per), y = days[d], x = out[b];
      if (!x) { x = out[b] = { sessions: 0, inputs: 0, redirects: 0, clusters: 0, tokens: {}, cost: {} }; order.push(b); }
      ["sessions", "inputs", "redirects", "clusters"].forEach(function (f) { x[f] += y[f]; });
      ["tokens", "cost"].forEach(function (f) {
        Object.keys(y[f]).forEach(function (g) { x[f][g] = (x[f][g] || 0) + y[f][g]; });
      });
    });
    return { labels: order, days: out };
  }

  function aggregate(chosen, by) {
    var days = {}, groups = {}, total = row("total"), models = {}, harnesses = {};
    function day(d) {
      if (!days[d]) { days[d] = { sessions: 0, inputs: 0, redirects: 0, clusters: 0, tokens: {}, cost: {} }; }
      return days[d];
    }
    chosen.forEach(function (s) {
      var h = harnesses[s.h] || (harnesses[s.h] = row(s.h)), counted = {};
      // A session under another one (subagent, sidechain, compaction run) is not a session of its own.
      if (!s.c) { day(s.day).sessions += 1; total.sessions += 1; h.sessions += 1; }
      s.daily.forEach(function (x) {
        var d = day(x[0]);
        d.inputs += x[1]; d.redirects += x[2]; d.clusters += x[3];
        [total, h].forEach(function (r) { r.inputs += x[1]; r.redirects += x[2]; r.clusters += x[3]; });
      });
      s.u.forEach(function (u) {
        var d = day(u[0]), g = by === "harness" ? s.h : u[1];
        var m = models[u[1]] || (models[u[1]] = row(u[1]));
        if (!counted[u[1]]) { counted[u[1]] = true; m.sessions += 1; }
        groups[g] = true;
        d.tokens[g] = (d.tokens[g] || 0) + u[2];
        d.cost[g] = (d.cost[g] || 0) + u[3];
        [total, h, m].forEach(function (r) { r.tokens += u[2]; r.cost += u[3]; r.priced += u[4]; r.turns += u[5] || 0; });
      });
    });
    var labels = everyDay(days);
    labels.forEach(function (d) { day(d); });
    var dated = labels.filter(function (d) { return /^\d{4}-\d{2}-\d{2}$/.test(d); }).length;
    var per = dated > PER_MONTH ? "month" : dated > PER_WEEK ? "week" : "day";
    if (per !== "day") {
      var b = buckets(labels, days, per);
      labels = b.labels;
      days = b.days;
    }
    // The biggest groups by tokens get a colour each; the rest are summed as "other" (a legend stays readable).
    var size = {};
    Object.keys(days).forEach(function (d) {
      Object.keys(days[d].tokens).forEach(function (g) { size[g] = (size[g] || 0) + days[d].tokens[g]; });
    });
    var ranked = Object.keys(groups).sort(function (a, b) { return size[b] - size[a] || (a < b ? -1 : 1); });
    if (ranked.length > MAX_GROUPS) {
      var rest = ranked.slice(MAX_GROUPS - 1);
      ranked = ranked.slice(0, MAX_GROUPS - 1).concat(["other"]);
      Object.keys(days).forEach(function (d) {
        ["tokens", "cost"].forEach(function (f) {
          rest.forEach(function (g) {
            if (days[d][f][g]) { days[d][f].other = (days[d][f].other || 0) + days[d][f][g]; }
          });
        });
      });
    }
    function byTokens(rows) {
      return Object.keys(rows).map(function (k) { return rows[k]; })
        .sort(function (a, b) { return b.tokens - a.tokens || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0); });
    }
    return { labels: labels, days: days, groups: ranked, total: total, models: byTokens(models),
             harnesses: byTokens(harnesses), per: per };
  }

  // A cost as the server's tables print it: n/a with no price, * when only part of the tokens has one.
  // Costs arrive in whole billionths of a dollar: integer sums stay exact; dollars only for display.
  function money(r) {
    if (!r.priced) { return r.tokens ? "n/a" : "-"; }
    var text = r.cost > 0 && r.cost < 5e6 ? "<$0.01" : "$" + (r.cost / 1e9).toLocaleString("en-US",
      { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    return r.priced < r.tokens ? text + "*" : text;
  }

  function cell(tr, text, numeric) {
    var td = document.createElement("td");
    if (numeric) { td.className = "n"; }
    if (text instanceof Node) { td.appendChild(text); } else { td.textContent = text; }
    tr.appendChild(td);
  }

  function harnessBadge(h) {
    var span = document.createElement("span");
    span.className = "harness h-" + (["claude_code", "codex", "omp", "pi"].indexOf(h) >= 0 ? h : "other");
    span.textContent = label(h).replace(/_/g, " ");
    return span;
  }

  // The Model and Harness tables, from the sessions the filters chose (an empty choice says so).
  function fillTable(id, rows, columns) {
    var body = document.querySelector("#" + id + " tbody");
    var fresh = document.createElement("tbody");
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      columns.forEach(function (c, i) { cell(tr, c(r), i > 0); });
      fresh.appendChild(tr);
    });
    if (!rows.length) {
      var tr = document.createElement("tr"), td = document.createElement("td");
      td.colSpan = columns.length;
      td.className = "none";
      td.textContent = sessions.length ? "No session matches these filters." : "No sessions.";
      tr.appendChild(td);
      fresh.appendChild(tr);
    }
    body.parentNode.replaceChild(fresh, body);
  }

  function num(n) { return n.toLocaleString("en-US"); }

  function fillTables(agg) {
    fillTable("by-model", agg.models, [
      function (r) { return label(r.name); }, function (r) { return num(r.sessions); },
      function (r) { return num(r.turns); }, function (r) { return fmtTokens(r.tokens); }, money]);
    fillTable("by-harness", agg.harnesses, [
      function (r) { return harnessBadge(r.name); }, function (r) { return num(r.sessions); },
      function (r) { return num(r.inputs); }, function (r) { return num(r.redirects); },
      function (r) { return num(r.clusters); }, function (r) { return fmtTokens(r.tokens); }, money]);
  }

  function draw(id, config) {
    if (charts[id]) { charts[id].destroy(); }
    charts[id] = new Chart(document.getElementById(id), config);
  }

  function stacked(agg, field, money) {
    return {
      type: "bar",
      data: {
        labels: agg.labels,
        datasets: agg.groups.map(function (g, i) {
          return { label: label(g), backgroundColor: PALETTE[i % PALETTE.length], stack: "s",
                   data: agg.labels.map(function (d) { return (agg.days[d][field][g] || 0) / (money ? 1e9 : 1); }) };
        })
      },
      options: {
        animation: false, maintainAspectRatio: false, responsive: true,
        plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } },
                   tooltip: { callbacks: { label: function (c) {
                     return c.dataset.label + ": " + (money ? "$" + c.parsed.y.toFixed(2) : fmtTokens(c.parsed.y)); } } } },
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true,
                  ticks: { callback: function (v) { return money ? "$" + v : fmtTokens(v); } } } }
      }
    };
  }

  // The search box over what was said: the site's own index (search/NNNN.js: the redacted text rematch
  // search indexes, see docs/search.md), loaded as scripts on first use (a page opened from file:// cannot
  // fetch() a file), searched here, within the sessions the filters chose. Words are tokens as rematch
  // search's FTS5 tokenizer makes them (unicode61 remove_diacritics 2: letters and digits, case and Latin
  // accents folded); hits are ranked by bm25 over the shipped records, as the CLI ranks.
  var find = document.getElementById("s-q"), findStatus = document.getElementById("s-status");
  var findHits = document.getElementById("s-hits");
  var meta = data.search, pending = -1, timer = null, chosenKeys = null, MAX_HITS = 100;
  var order = {}, byKey = {};
  sessions.forEach(function (s, i) { order[s.k] = i; byKey[s.k] = s; });
  // The records: docs[i] = {c: its session's entry, r: [seq, kind, time, text], f: the text folded}.
  // A query scans the folded texts (indexOf of a term's longest word, then its word boundaries where that
  // finds it): no index is built, so the files cost little more to load than to parse and fold (a token
  // index of the 256 MB bench's 2M tokens took 2.3 s to build).
  // chars counts the folded texts' characters: bm25's lengths are in characters, not tokens.
  var docs = [], chars = 0, absent = false;
  var BM25_K1 = 1.2, BM25_B = 0.75;

  // FTS5's unicode61 with remove_diacritics 2: a token is a run of letters, digits and marks (every other
  // character separates); a Latin letter's accents are dropped, case folded, a final sigma is a sigma.
  var TOKEN_CHAR = "\\p{L}\\p{N}\\p{M}\\p{Co}", TOKEN = new RegExp("[" + TOKEN_CHAR + "]+", "gu");
  function fold(text) {
    // Most text is ASCII: normalising it is work for nothing.
    if (/[^\x00-\x7f]/.test(text)) {
      return text.normalize("NFD").replace(/(\p{Script=Latin})\p{M}+/gu, "$1").toLowerCase().replace(/ς/g, "σ");
    }
    return text.toLowerCase();
  }
  function words(text) { return fold(text).match(TOKEN) || []; }

  // Each file's records are folded as it arrives (the page stays responsive between files). A file holds
  // them deflated, in base64 (report/search_site.py): inflated by the browser's DecompressionStream.
  function inflate(packed) {
    var bin = atob(packed);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }
  window.rematchSearch = function (packed) {
    inflate(String(packed)).then(take, function () {
      pending = -2;
      findStatus.textContent = "The search index could not be read (a damaged file in search/): build the report again.";
    });
  };
  function take(list) {
    list.forEach(function (x) {
      var c = { k: x[0], sid: x[1] };
      x[2].forEach(function (r) {
        var f = fold(String(r[3]));
        chars += f.length;
        docs.push({ c: c, r: r, f: f });
      });
    });
    pending -= 1;
    if (pending === 0) { runSearch(); }
  }

  function loadIndex() {
    if (pending !== -1 || !meta) { return; }
    pending = meta.files.length;
    meta.files.forEach(function (name) {
      var el = document.createElement("script");
      el.src = "search/" + name;
      el.onerror = function () { pending = -2; findStatus.textContent = "The search index could not be loaded (search/" + name + ")."; };
      document.body.appendChild(el);
    });
  }

  // The query as rematch search reads it (docs/search.md): each word, or "quoted phrase", is a phrase of
  // its tokens that must occur in a record; word* (or "a phrase"*) also matches the longer words it begins;
  // OR in capitals between two terms matches either; -word (or -"a phrase") leaves out the records that
  // hold it. A term with no letter or digit asks for nothing, so is left out. Terms are {w: tokens, star,
  // minus}; the result: {groups: the positive terms as groups of alternatives (each group must match),
  // all: the positive terms in the order typed, out: the terms left out}.
  function parse(q) {
    var raw = [], i = 0, n = q.length, space = /\s/;
    while (i < n) {
      if (space.test(q[i])) { i++; continue; }
      var minus = q[i] === "-" && i + 1 < n && !space.test(q[i + 1]);
      var j = minus ? i + 1 : i, text, quoted = false, star = false;
      if (q[j] === '"') {
        var close = q.indexOf('"', j + 1);
        if (close < 0) { close = n; }  // an unclosed quote runs to the end
        text = q.slice(j + 1, close);
        quoted = true;
        i = close + 1;
        if (i < n && q[i] === "*") { star = true; i++; }
      } else {
        var end = j;
        while (end < n && !space.test(q[end]) && q[end] !== '"') { end++; }
        text = q.slice(j, end);
        i = end;
        if (text.length > 1 && text[text.length - 1] === "*") { star = true; text = text.slice(0, -1); }
      }
      var ws = words(text);
      if (ws.length) { raw.push({ text: text, w: ws, quoted: quoted, star: star, minus: minus }); }
    }
    var groups = [], all = [], out = [], joined = false;
    raw.forEach(function (t, k) {
      if (t.minus) { out.push(t); joined = false; return; }
      if (t.text === "OR" && !t.quoted && !t.star && groups.length && !joined && k + 1 < raw.length && !raw[k + 1].minus) {
        joined = true;
        return;
      }
      if (joined) { groups[groups.length - 1].push(t); } else { groups.push([t]); }
      all.push(t);
      joined = false;
    });
    return { groups: groups, all: all, out: out };
  }

  // Whether the character at i (the one ending at i - 1, with before) is a token character.
  var ONE = new RegExp("[" + TOKEN_CHAR + "]", "u");
  function tokenChar(f, i, before) {
    if (before ? i <= 0 : i >= f.length) { return false; }
    var c = f.charCodeAt(before ? i - 1 : i);
    if (c < 128) { return (c >= 48 && c <= 57) || (c >= 97 && c <= 122) || (c >= 65 && c <= 90); }
    if (before && c >= 0xdc00 && c <= 0xdfff && i >= 2) { return ONE.test(String.fromCodePoint(f.codePointAt(i - 2))); }
    return ONE.test(String.fromCodePoint(f.codePointAt(before ? i - 1 : i)));
  }

  // How often a term occurs in a folded text: its tokens whole, in order, with anything but token
  // characters between them; with prefix (the fallback), its last token may begin a longer one. The
  // match starts with a literal (fast to find); the word boundaries are checked after.
  function count(f, term, between, prefix) {
    var n = 0, at = 0, m;
    for (;;) {
      var start, end;
      if (between === null) {
        start = f.indexOf(term[0], at);
        if (start < 0) { return n; }
        end = start + term[0].length;
      } else {
        between.lastIndex = at;
        m = between.exec(f);
        if (m === null) { return n; }
        start = m.index;
        end = start + m[0].length;
      }
      if (!tokenChar(f, start, true) && (prefix || !tokenChar(f, end, false))) { n++; at = end; } else { at = start + 1; }
    }
  }

  // Record -> how often the term occurs in it, over every shipped record (bm25's document frequencies
  // are the whole index's, as FTS5's are the table's). The last terms' are kept: typing a query word by
  // word scans only the word typed last (a few: a common word's map holds most records).
  var seenTerms = new Map(), KEEP_TERMS = 16;
  function occurrences(term, prefix) {
    var key = (prefix ? "*" : "=") + term.join(" "), got = seenTerms.get(key);
    if (got === undefined) {
      got = scan(term, prefix);
      if (seenTerms.size >= KEEP_TERMS) { seenTerms.delete(seenTerms.keys().next().value); }
    } else {
      seenTerms.delete(key);  // kept as the newest
    }
    seenTerms.set(key, got);
    return got;
  }

  // out.absent: the term's longest word is in no record even as part of a word (then neither is a
  // longer word it begins: the prefix fallback has nothing to find).
  function scan(term, prefix) {
    var out = new Map(), probe = term.reduce(function (a, b) { return b.length > a.length ? b : a; });
    out.absent = true;
    var between = term.length > 1 ? new RegExp(term.join("[^" + TOKEN_CHAR + "]+"), "gu") : null;
    for (var d = 0; d < docs.length; d++) {
      var f = docs[d].f;
      if (f.indexOf(probe) < 0) { continue; }
      out.absent = false;
      var n = count(f, term, between, prefix);
      if (n) { out.set(d, n); }
    }
    return out;
  }

  // Whether a term may end in a longer word: its own star, or (the fallback) the word being typed last.
  function endsOpen(t, query, prefix) { return t.star || (prefix && t === query.all[query.all.length - 1]); }

  // The hits of the query: records where each group has a term, holding none of the terms left out, in
  // the chosen sessions, each with its bm25 score summed over every positive term it holds (FTS5's k1 and
  // b; IDF over all shipped records, at least 1e-6), best first; ties newest session first, then in the
  // order they were said.
  function ranked(query, prefix) {
    // The groups whose longest word is longest first (likely the rarest): one found nowhere ends the scan.
    var longest = function (g) {
      return Math.max.apply(null, g.map(function (t) { return Math.max.apply(null, t.w.map(function (w) { return w.length; })); }));
    };
    var groups = query.groups.slice().sort(function (a, b) { return longest(b) - longest(a); });
    var per = [], terms = [], hits = [];
    absent = false;
    for (var g = 0; g < groups.length; g++) {
      var union = new Map(), gone = true;
      groups[g].forEach(function (t) {
        var m = occurrences(t.w, endsOpen(t, query, prefix));
        terms.push(m);
        gone = gone && m.absent;
        m.forEach(function (_, d) { union.set(d, true); });
      });
      if (!union.size) { absent = gone; return hits; }
      per.push(union);
    }
    per.sort(function (a, b) { return a.size - b.size; });
    var left = query.out.map(function (t) { return occurrences(t.w, t.star); });
    var n = docs.length, avg = n ? chars / n : 1;
    var idf = terms.map(function (m) { return Math.max(1e-6, Math.log((n - m.size + 0.5) / (m.size + 0.5))); });
    per[0].forEach(function (_, d) {
      var doc = docs[d];
      if (chosenKeys && !chosenKeys[doc.c.k]) { return; }
      for (var i = 1; i < per.length; i++) { if (!per[i].has(d)) { return; } }
      for (i = 0; i < left.length; i++) { if (left[i].has(d)) { return; } }
      var score = 0, norm = BM25_K1 * (1 - BM25_B + BM25_B * doc.f.length / avg);
      for (i = 0; i < terms.length; i++) {
        var f = terms[i].get(d);
        if (f) { score += idf[i] * f * (BM25_K1 + 1) / (f + norm); }
      }
      hits.push({ d: doc, s: score });
    });
    hits.sort(function (a, b) {
      return (b.s - a.s) || (order[a.d.c.k] - order[b.d.c.k]) || ((a.d.r[0] || 0) - (b.d.r[0] || 0));
    });
    return hits;
  }

  // The matched tokens of a record's text as [start, end) character ranges: a term's tokens where the whole
  // term occurs (a phrase's tokens in sequence), found again in the text as shown (its own tokens folded).
  function marks(text, query, prefix) {
    // A regex of its own: match() with TOKEN (global) below resets TOKEN's lastIndex.
    var found = [], m, each = new RegExp(TOKEN.source, "gu");
    while ((m = each.exec(text)) !== null) {
      var w = fold(m[0]).match(TOKEN);
      if (w) { found.push([m.index, m.index + m[0].length, w.join("")]); }
    }
    var on = [];
    function same(tok, w, last) { return last ? tok.lastIndexOf(w, 0) === 0 : tok === w; }
    query.all.forEach(function (t) {
      var term = t.w, longer = endsOpen(t, query, prefix);  // its last word may begin a longer one
      for (var i = 0; i + term.length <= found.length; i++) {
        var j = 0;
        while (j < term.length && same(found[i + j][2], term[j], longer && j === term.length - 1)) { j++; }
        if (j === term.length) { for (j = 0; j < term.length; j++) { on[i + j] = true; } }
      }
    });
    return found.filter(function (_, i) { return on[i]; }).map(function (f) { return [f[0], f[1]]; });
  }

  function snippet(r, query, prefix) {
    var text = String(r[3]), ms = marks(text, query, prefix);
    var first = ms.length ? ms[0][0] : 0;
    var start = Math.max(0, first - 60), end = Math.min(text.length, first + 160), pos = start;
    var out = document.createElement("div");
    out.className = "snip";
    if (start > 0) { out.appendChild(document.createTextNode("…")); }
    ms.forEach(function (x) {
      if (x[0] < pos || x[0] >= end) { return; }
      if (x[0] > pos) { out.appendChild(document.createTextNode(text.slice(pos, x[0]))); }
      var mk = document.createElement("mark");
      mk.textContent = text.slice(x[0], Math.min(x[1], end));
      out.appendChild(mk);
      pos = Math.min(x[1], end);
    });
    if (pos < end) { out.appendChild(document.createTextNode(text.slice(pos, end))); }
    if (end < text.length) { out.appendChild(document.createTextNode("…")); }
    return out;
  }

  function hitItem(c, r, query, prefix) {
    var li = document.createElement("li"), line = document.createElement("div"), a = document.createElement("a");
    var s = byKey[c.k];
    line.className = "meta";
    if (s) { line.appendChild(harnessBadge(s.h)); }
    a.href = "sessions/" + encodeURIComponent(c.k) + ".html" + (typeof r[0] === "number" ? "#conv-" + r[0] : "");
    a.textContent = (typeof r[2] === "number" ? new Date(r[2]).toISOString().slice(0, 16).replace("T", " ") + "  " : "") +
      (c.sid || c.k);
    line.appendChild(a);
    var kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = r[1] + (typeof r[0] === "number" ? " #" + r[0] : "");
    line.appendChild(kind);
    li.appendChild(line);
    li.appendChild(snippet(r, query, prefix));
    return li;
  }

  function runSearch() {
    var q = find.value.trim();
    while (findHits.firstChild) { findHits.removeChild(findHits.firstChild); }
    if (!q) { findStatus.textContent = ""; return; }
    if (!meta) {
      findStatus.textContent = "This report has no search index (it is built from search.sqlite in the data folder).";
      return;
    }
    loadIndex();
    if (pending !== 0) {
      if (pending > 0) { findStatus.textContent = "Loading the search index…"; }
      return;
    }
    var query = parse(q), prefix = false;
    if (!query.all.length) {
      findStatus.textContent = query.out.length ? "No match: say what to find, not only what to leave out (-word)."
        : "No match: search for words (letters or digits).";
      return;
    }
    var hits = ranked(query, false);
    // No record has the whole words: the word being typed (the last) is taken as the start of a longer one.
    if (!hits.length && !absent && !query.all[query.all.length - 1].star) { prefix = true; hits = ranked(query, true); }
    var hitSessions = {};
    hits.forEach(function (h) { hitSessions[h.d.c.k] = true; });
    hits.slice(0, MAX_HITS).forEach(function (h) { findHits.appendChild(hitItem(h.d.c, h.d.r, query, prefix)); });
    var n = Object.keys(hitSessions).length;
    var status = hits.length ? hits.length + " hit(s) in " + n + " session(s), best first" +
      (prefix ? " (no whole-word match: the last word as the start of longer ones)" : "") +
      (hits.length > MAX_HITS ? ", the first " + MAX_HITS + " shown" : "") + "."
      : "No match" + (chosenKeys && Object.keys(chosenKeys).length < sessions.length ? " in the sessions these filters choose" : "") + ".";
    if (meta.sessions < meta.of) { status += " The index covers the newest " + meta.sessions + " of " + meta.of + " sessions."; }
    findStatus.textContent = status;
  }

  find.addEventListener("focus", loadIndex);
  find.addEventListener("input", function () {
    if (timer) { clearTimeout(timer); }
    // The hits of the words before never stand under the words now.
    findStatus.textContent = "";
    while (findHits.firstChild) { findHits.removeChild(findHits.firstChild); }
    timer = setTimeout(runSearch, 120);
  });

  function update() {
    var text = search.value.trim().toLowerCase();
    // A filter chooses whole sessions: a main session with everything under it (tree.js).
    var hit = {};
    sessions.forEach(function (s) { if (matches(s, text)) { hit[s.g || s.k] = true; } });
    var chosen = sessions.filter(function (s) { return hit[s.g || s.k]; });
    var keep = {};
    chosen.forEach(function (s) { keep[s.k] = true; });
    chosenKeys = keep;
    if (find.value.trim()) { runSearch(); }
    Object.keys(rows).forEach(function (k) { rows[k].classList.toggle("hidden-by-filter", !keep[k]); });
    if (window.rematchTree) { window.rematchTree(); }
    document.getElementById("empty").hidden = chosen.length > 0 || sessions.length === 0;
    var agg = aggregate(chosen, document.getElementById("c-by").value);
    var t = agg.total;
    document.getElementById("t-sessions").textContent = t.sessions;
    document.getElementById("t-inputs").textContent = t.inputs.toLocaleString("en-US");
    document.getElementById("t-redirects").textContent = t.redirects;
    document.getElementById("t-clusters").textContent = t.clusters;
    document.getElementById("t-tokens").textContent = fmtTokens(t.tokens);
    // Costs arrive in whole billionths of a dollar: integer sums stay exact; dollars only for display.
    document.getElementById("t-cost").textContent = !t.priced ? (t.tokens ? "n/a" : "-") :
      (t.cost > 0 && t.cost < 5e6 ? "<$0.01" : "$" + (t.cost / 1e9).toFixed(2));
    document.getElementById("t-priced").textContent =
      t.tokens && t.priced < t.tokens ? "covers " + Math.floor(t.priced * 100 / t.tokens) + "% of tokens" : "";
    fillTables(agg);
    document.querySelectorAll(".chart .per").forEach(function (el) {
      el.textContent = agg.per === "week" ? "week (from Monday)" : agg.per;
    });
    draw("c-activity", {
      type: "bar",
      data: {
        labels: agg.labels,
        datasets: [
          { type: "line", label: "inputs", yAxisID: "y2", borderColor: "#4f46e5", backgroundColor: "#4f46e5", tension: 0.25,
            data: agg.labels.map(function (d) { return agg.days[d].inputs; }) },
          { label: "sessions", backgroundColor: "#94a3b8", data: agg.labels.map(function (d) { return agg.days[d].sessions; }) },
          { label: "redirects", backgroundColor: "#d97706", data: agg.labels.map(function (d) { return agg.days[d].redirects; }) },
          { label: "error clusters", backgroundColor: "#dc2626", data: agg.labels.map(function (d) { return agg.days[d].clusters; }) }
        ]
      },
      options: { animation: false, maintainAspectRatio: false, responsive: true,
                 plugins: { legend: { position: "bottom", labels: { boxWidth: 12 } } },
                 scales: { y: { beginAtZero: true, ticks: { precision: 0 } },
                           y2: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, ticks: { precision: 0 } } } }
    });
    draw("c-tokens", stacked(agg, "tokens", false));
    draw("c-cost", stacked(agg, "cost", true));
    var state = selects.map(function (s) { return s.value; }).concat([search.value]);
    var hash = state.some(function (v) { return v; }) ? "#" + state.map(encodeURIComponent).join("|") : "";
    if (location.hash !== hash) { history.replaceState(null, "", hash || location.pathname); }
  }

  if (location.hash.length > 1) {
    var parts = location.hash.slice(1).split("|").map(function (p) {
      try { return decodeURIComponent(p); } catch (e) { return ""; }
    });
    selects.forEach(function (sel, i) {
      if (parts[i] && Array.prototype.some.call(sel.options, function (o) { return o.value === parts[i]; })) { sel.value = parts[i]; }
    });
    search.value = parts[selects.length] || "";
  }
  selects.forEach(function (sel) { sel.addEventListener("change", update); });
  search.addEventListener("input", update);
  document.getElementById("c-by").addEventListener("change", update);
  document.getElementById("f-reset").addEventListener("click", function () {
    selects.forEach(function (s) { s.value = ""; });
    search.value = "";
    update();
  });
  update();
}());
