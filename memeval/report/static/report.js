// memeval report: filters, keyboard navigation, and human grades kept in localStorage and
// exported as grades.json for `memeval grade`. Text from the run is only ever set through
// textContent / dataset, never parsed as HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var storeKey = "memeval-grades:" + data.runId;
  var graderKey = "memeval-grader";
  var cards = Array.prototype.slice.call(document.querySelectorAll("article.card"));
  var grades = {};

  function keyOf(scenario, repeat, turn, target) {
    return JSON.stringify([scenario, Number(repeat), turn, target]);
  }
  function storage() {
    try { return window.localStorage; } catch (e) { return null; }
  }
  function load() {
    (data.humanGrades || []).forEach(function (g) {
      grades[keyOf(g.scenario, g.repeat, g.turn, g.target)] = { verdict: g.verdict, note: g.note || "" };
    });
    var s = storage();
    if (!s) return;
    try {
      var saved = JSON.parse(s.getItem(storeKey) || "{}");
      Object.keys(saved).forEach(function (k) { grades[k] = saved[k]; });
    } catch (e) { /* a corrupt entry is ignored: the merged grades still show */ }
  }
  function save() {
    var s = storage();
    if (s) { try { s.setItem(storeKey, JSON.stringify(grades)); } catch (e) { /* quota: keep in memory */ } }
    updateCount();
  }
  function updateCount() {
    var n = Object.keys(grades).filter(function (k) { return grades[k] && grades[k].verdict; }).length;
    document.getElementById("grade-count").textContent = n + (n === 1 ? " grade" : " grades");
  }

  function gradeKey(card, box) {
    return keyOf(card.dataset.scenario, card.dataset.repeat, card.dataset.turn, box.dataset.target);
  }
  function paint(card, box) {
    var g = grades[gradeKey(card, box)] || {};
    box.querySelectorAll("button.gb").forEach(function (b) {
      b.setAttribute("aria-pressed", String(g.verdict === b.dataset.verdict));
    });
    var note = box.querySelector(".g-note");
    if (document.activeElement !== note) note.value = g.note || "";
  }
  function setVerdict(card, box, verdict) {
    var k = gradeKey(card, box);
    var g = grades[k] || { verdict: null, note: "" };
    g.verdict = g.verdict === verdict ? null : verdict; // clicking the pressed button clears it
    grades[k] = g;
    save();
    paint(card, box);
  }

  cards.forEach(function (card) {
    card.querySelectorAll(".grade").forEach(function (box) {
      box.querySelectorAll("button.gb").forEach(function (b) {
        b.addEventListener("click", function () { setVerdict(card, box, b.dataset.verdict); });
      });
      box.querySelector(".g-note").addEventListener("input", function (ev) {
        var k = gradeKey(card, box);
        var g = grades[k] || { verdict: null, note: "" };
        g.note = ev.target.value;
        grades[k] = g;
        save();
      });
    });
  });

  function exportGrades() {
    var grader = document.getElementById("grader").value.trim();
    var out = [];
    Object.keys(grades).sort().forEach(function (k) {
      var g = grades[k];
      if (!g || !g.verdict) return;
      var p = JSON.parse(k);
      out.push({ scenario: p[0], repeat: p[1], turn: p[2], target: p[3], verdict: g.verdict,
                 note: g.note || "", grader: grader });
    });
    var blob = new Blob([JSON.stringify({ schema_version: 1, grades: out }, null, 2) + "\n"],
                        { type: "application/json" });
    var a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "grades.json";
    document.body.appendChild(a);
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  document.getElementById("export").addEventListener("click", exportGrades);

  var graderInput = document.getElementById("grader");
  var st = storage();
  if (st) graderInput.value = st.getItem(graderKey) || "";
  graderInput.addEventListener("input", function () {
    if (st) { try { st.setItem(graderKey, graderInput.value); } catch (e) { /* ignore */ } }
  });

  // injected memory: each distinct text travels once in the JSON; fill a box when opened
  document.querySelectorAll("details.mem").forEach(function (d) {
    d.addEventListener("toggle", function () {
      var pre = d.querySelector("pre");
      if (d.open && !pre.dataset.filled) {
        pre.textContent = (data.memories || {})[d.dataset.mem] || "";
        pre.dataset.filled = "1";
      }
    });
  });

  // retention grid: cells carry no text; title them on hover from their row and column
  document.querySelectorAll("table.grid").forEach(function (table) {
    var heads = table.querySelectorAll("thead th a");
    table.addEventListener("mouseover", function (ev) {
      var td = ev.target.closest("td");
      if (!td || td.title || td.querySelector("a")) return;
      var row = td.parentElement;
      var col = Array.prototype.indexOf.call(row.children, td) - 1;
      var fact = row.querySelector("th code").textContent;
      var state = td.className.split(" ")[0].replace("c-", "");
      td.title = fact + " after " + heads[col].title + ": " + state;
    });
  });

  // filters
  var fFail = document.getElementById("f-fail");
  var fQuestion = document.getElementById("f-question");
  var fUnit = document.getElementById("f-unit");
  var sessions = Array.prototype.slice.call(document.querySelectorAll("div.session"));
  function applyFilters() {
    var unit = fUnit ? fUnit.value : "";
    document.querySelectorAll("section.unit").forEach(function (u) {
      u.hidden = unit !== "" && u.dataset.unit !== unit;
    });
    cards.forEach(function (c) {
      c.hidden = (fFail.checked && c.dataset.fail !== "1") ||
                 (fQuestion.checked && c.dataset.question !== "1");
    });
    sessions.forEach(function (s) {
      s.hidden = !s.querySelector("article.card:not([hidden])");
    });
  }
  [fFail, fQuestion, fUnit].forEach(function (el) { if (el) el.addEventListener("change", applyFilters); });

  var helpBtn = document.getElementById("help-btn");
  var help = document.getElementById("help");
  function toggleHelp() {
    help.hidden = !help.hidden;
    helpBtn.setAttribute("aria-expanded", String(!help.hidden));
  }
  helpBtn.addEventListener("click", toggleHelp);

  // keyboard navigation
  var current = -1;
  function visible() {
    return cards.filter(function (c) { return !c.hidden && !c.closest("section.unit").hidden; });
  }
  function focusCard(card) {
    cards.forEach(function (c) { c.classList.remove("focused"); });
    card.classList.add("focused");
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "start" });
    current = cards.indexOf(card);
  }
  function move(step) {
    var list = visible();
    if (!list.length) return;
    var at = list.indexOf(cards[current]);
    var next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, at + step));
    focusCard(list[next]);
  }
  function focusedCard() {
    var c = cards[current];
    return c && !c.hidden ? c : null;
  }
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) {
      if (ev.key === "Escape") t.blur();
      return;
    }
    var card = focusedCard();
    var boxes = card ? card.querySelectorAll(".grade") : [];
    var writeBox = card ? card.querySelector('.grade[data-target="write"]') : null;
    switch (ev.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "p": case "f": if (boxes.length) setVerdict(card, boxes[0], ev.key === "p" ? "pass" : "fail"); break;
      case "P": case "F": if (writeBox) setVerdict(card, writeBox, ev.key === "P" ? "pass" : "fail"); break;
      case "n": if (boxes.length) { boxes[0].querySelector(".g-note").focus(); ev.preventDefault(); } break;
      case "o": if (card) card.querySelectorAll("details").forEach(function (d) { d.open = true; }); break;
      case "x": fFail.checked = !fFail.checked; applyFilters(); break;
      case "q": fQuestion.checked = !fQuestion.checked; applyFilters(); break;
      case "?": toggleHelp(); break;
      default: return;
    }
  });
  cards.forEach(function (c, i) {
    c.addEventListener("click", function () {
      cards.forEach(function (o) { o.classList.remove("focused"); });
      c.classList.add("focused");
      current = i;
    });
  });

  load();
  cards.forEach(function (card) { card.querySelectorAll(".grade").forEach(function (b) { paint(card, b); }); });
  updateCount();
})();
