// Warden console: the inbox's live rows (server-sent events), deadlines that count down, and
// confirmations. Served from the binary; no inline script anywhere (the page's CSP forbids it).
(function () {
  "use strict";

  function span(ms) {
    var s = Math.floor(Math.max(ms, 0) / 1000);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".countdown[data-due]").forEach(function (el) {
      var left = Number(el.getAttribute("data-due")) - now;
      var verb = el.getAttribute("data-verb") || "due";
      el.textContent = left > 0 ? verb + " in " + span(left) : "due";
      el.classList.toggle("soon", left > 0 && left < 60000);
    });
  }

  function live() {
    var rows = document.querySelector("[data-stream]");
    if (!rows || !window.EventSource) return;
    var dot = document.getElementById("live");
    var state = function (s) {
      if (dot) dot.setAttribute("data-state", s);
    };
    var source = new EventSource(rows.getAttribute("data-stream"));
    source.addEventListener("approvals", function (event) {
      rows.innerHTML = event.data;
      rows.setAttribute("data-updated", String(Date.now()));
      state("live");
      tick();
    });
    source.addEventListener("open", function () {
      state("live");
    });
    source.addEventListener("error", function () {
      state(source.readyState === EventSource.CLOSED ? "lost" : "connecting");
    });
  }

  document.addEventListener(
    "submit",
    function (event) {
      var form = event.target;
      var question = form && form.getAttribute && form.getAttribute("data-confirm");
      if (question && !window.confirm(question)) event.preventDefault();
    },
    true
  );

  tick();
  setInterval(tick, 1000);
  live();
})();
