// trove serve's pages: results as you type (debounced, the latest answer wins), `/` to focus
// the search box, ↑/↓ between results and Enter to open one, the lines of a permalink
// (#L10-L20) highlighted, and a definition's references in the file page's side panel (Escape
// closes it). The server renders every page; this only fetches its fragments. Without the
// script every link still goes to a whole page.
(function () {
  "use strict";
  var form = document.getElementById("search");
  var box = document.getElementById("q");
  var out = document.getElementById("results");
  var timer = null;
  var seq = 0;
  var selected = -1;

  function query() {
    return new URLSearchParams(new FormData(form));
  }

  function run() {
    var params = query();
    var mine = ++seq;
    history.replaceState(null, "", "/?" + params.toString());
    params.set("partial", "1");
    fetch("/?" + params.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (mine !== seq) return;
        out.innerHTML = html; // rendered and escaped by the server
        selected = -1;
      });
  }

  if (form && box && out) {
    box.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(run, 150);
    });
    form.addEventListener("change", function (e) {
      if (e.target !== box) run();
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      clearTimeout(timer);
      run();
    });
  }

  document.addEventListener("keydown", function (e) {
    var typing = document.activeElement && /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    if (e.key === "/" && !typing && box) {
      e.preventDefault();
      box.focus();
      box.select();
      return;
    }
    var links = Array.prototype.slice.call(document.querySelectorAll(".hit a.open"));
    if (!links.length) return;
    if (e.key === "ArrowDown") {
      e.preventDefault();
      selected = Math.min(selected + 1, links.length - 1);
      links[selected].focus();
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      selected = Math.max(selected - 1, 0);
      links[selected].focus();
    }
  });

  function mark() {
    Array.prototype.forEach.call(document.querySelectorAll("tr.hl"), function (r) {
      r.classList.remove("hl");
    });
    var m = /^#L(\d+)(?:-L(\d+))?$/.exec(location.hash);
    if (!m) return;
    var a = +m[1], b = m[2] ? +m[2] : a;
    for (var i = a; i <= b; i++) {
      var row = document.getElementById("L" + i);
      if (row) row.classList.add("hl");
    }
    var first = document.getElementById("L" + a);
    if (first) first.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", mark);
  mark();

  // The references panel of the file page: a definition's link (and the panel's own tabs) load
  // the references page's fragment into it.
  var panel = document.getElementById("panel");
  var opener = null;
  var panelSeq = 0;
  function openPanel(href) {
    var mine = ++panelSeq;
    // Anything but the fragment (a login page, an error, no answer): the whole page instead.
    fetch(href + (href.indexOf("?") < 0 ? "?" : "&") + "partial=1", { credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok || r.redirected) throw new Error("not the fragment");
        return r.text();
      })
      .then(function (html) {
        if (mine !== panelSeq) return;
        panel.innerHTML = html; // rendered and escaped by the server
        panel.hidden = false;
        var h = panel.querySelector("h2");
        if (h) h.focus();
      })
      .catch(function () {
        if (mine === panelSeq) location.href = href;
      });
  }
  function closePanel() {
    panel.hidden = true;
    panel.innerHTML = "";
    if (opener) opener.focus();
  }
  if (panel) {
    document.addEventListener("click", function (e) {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      var a = e.target.closest ? e.target.closest("a") : null;
      var close = e.target.closest ? e.target.closest("#panel button.close") : null;
      if (close) {
        closePanel();
      } else if (a && a.matches("table.source a.def")) {
        e.preventDefault();
        opener = a;
        openPanel(a.getAttribute("href"));
      } else if (a && a.matches("#panel nav.tabs a")) {
        e.preventDefault();
        openPanel(a.getAttribute("href"));
      }
    });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && !panel.hidden) closePanel();
    });
  }

  // A newer version of the bundles: every answer names the version served; the page names its
  // own. Checked every few seconds with a HEAD of the script (open, even with --token).
  var shown = document.querySelector('meta[name="trove-generation"]');
  var banner = document.getElementById("reload-banner");
  function check() {
    if (!shown || !banner || document.hidden) return;
    fetch("/static/app.js", { method: "HEAD", cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        var now = r.headers.get("x-trove-generation");
        if (now && now !== shown.content) banner.hidden = false;
      })
      .catch(function () {});
  }
  setInterval(check, 3000);
  document.addEventListener("visibilitychange", check);
})();
