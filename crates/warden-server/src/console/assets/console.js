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

  // Whether someone is working in a row: its focus, or text typed into it.
  function editing(row) {
    var active = document.activeElement;
    if (active && active !== document.body && row.contains(active)) return true;
    var typed = false;
    row.querySelectorAll("input[type=text], textarea").forEach(function (input) {
      if (input.value) typed = true;
    });
    return typed;
  }

  // Brings the inbox's rows up to date in place: a new row is inserted, a changed one
  // replaced, a gone one removed — but a row being edited is never touched (nor moved), so a
  // half-typed reason and the keyboard focus survive every update.
  function merge(rows, html) {
    var fresh = document.createElement("tbody");
    fresh.innerHTML = html;
    var old = {};
    Array.prototype.forEach.call(rows.children, function (row) {
      var id = row.getAttribute("data-approval");
      if (id) old[id] = row;
      else rows.removeChild(row);
    });
    var cursor = rows.firstElementChild;
    Array.prototype.slice.call(fresh.children).forEach(function (row) {
      var id = row.getAttribute("data-approval");
      var kept = id ? old[id] : null;
      if (!kept) {
        rows.insertBefore(row, cursor);
        return;
      }
      delete old[id];
      if (!editing(kept)) {
        if (kept.outerHTML !== row.outerHTML) {
          rows.replaceChild(row, kept);
          kept = row;
        }
        if (kept !== cursor) rows.insertBefore(kept, cursor);
      }
      cursor = kept.nextElementSibling;
    });
    Object.keys(old).forEach(function (id) {
      var row = old[id];
      if (editing(row)) row.classList.add("gone");
      else rows.removeChild(row);
    });
  }

  // What pulling the kill switch the form describes does, said before it is done.
  function killQuestion(form) {
    var scope = form.querySelector("select[name=scope]");
    var target = form.querySelector("input[name=target]");
    var which = target && target.value.trim();
    if (!scope || scope.value === "all") {
      return "Freeze EVERYTHING? Every tool call of every client and agent is refused " +
        "(KILL_SWITCH) until the switch is released, on every replica.";
    }
    var label = scope.options[scope.selectedIndex].text.replace(/^(A|An) /, "").toLowerCase();
    return "Pull a kill switch on " + label + " " + (which || "(none named)") + "? Every " +
      "matching call is refused (KILL_SWITCH) until it is released, on every replica.";
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
      merge(rows, event.data);
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
      if (form && form.hasAttribute && form.hasAttribute("data-confirm-kill")) {
        question = killQuestion(form);
      }
      if (question && !window.confirm(question)) event.preventDefault();
    },
    true
  );

  // Chat: a turn's events shown as they come (POST <form action>/events), then the thread's
  // page. Without this script, or when the server refuses, the form posts as it is.
  function say(list, role, text) {
    var item = document.createElement("li");
    item.className = "message";
    item.setAttribute("data-role", role);
    var body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    item.appendChild(body);
    list.appendChild(item);
    return body;
  }

  function streamChat(form) {
    var list = document.getElementById("messages");
    if (!list) {
      list = document.createElement("ol");
      list.className = "chat";
      list.id = "messages";
      form.parentNode.insertBefore(list, form.nextSibling);
    }
    var message = form.querySelector("textarea[name=message]");
    var body = new URLSearchParams(new FormData(form));
    var action = form.getAttribute("action").replace(/\/$/, "");
    var button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    var thread = action.indexOf("/chat/") === 0 ? action.slice(6) : null;
    var text = null;
    var live = document.createElement("p");
    live.id = "live";
    live.className = "muted";
    live.textContent = "The agent is answering…";
    say(list, "user", message ? message.value : "");
    list.appendChild(live);
    function handle(name, data) {
      if (name === "thread") thread = data.id;
      else if (name === "delta") {
        if (!text) text = say(list, "assistant", "");
        text.textContent += data.text;
      } else if (name === "tool_call") {
        text = null;
        say(list, "assistant", "→ " + data.name + "(" + data.arguments + ")");
      } else if (name === "decision") {
        say(list, "tool", data.status + (data.code ? " " + data.code : "") + ": " + data.message);
      } else if (name === "notice") {
        text = null;
        say(list, "notice", data.text);
      } else if (name === "done" || name === "error") {
        var page = thread ? "/chat/" + thread : "/chat";
        // The same page with only a fragment added would not load again.
        if (window.location.pathname === page) window.location.reload();
        else window.location.assign(page + "#end");
      }
      list.appendChild(live);
    }
    fetch(action + "/events", {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream" }
    }).then(function (response) {
      if (!response.ok || !response.body) {
        form.submit();
        return;
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var pending = "";
      function read() {
        return reader.read().then(function (chunk) {
          if (chunk.done) return;
          pending += decoder.decode(chunk.value, { stream: true });
          var end;
          while ((end = pending.indexOf("\n\n")) >= 0) {
            var block = pending.slice(0, end);
            pending = pending.slice(end + 2);
            var name = "message";
            var data = "";
            block.split("\n").forEach(function (line) {
              if (line.indexOf("event:") === 0) name = line.slice(6).trim();
              else if (line.indexOf("data:") === 0) data += line.slice(5).trim();
            });
            if (data) handle(name, JSON.parse(data));
          }
          return read();
        });
      }
      return read();
    }).catch(function () {
      form.submit();
    });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form || !form.matches || !form.matches("form#send, form#start-chat")) return;
    if (!window.fetch || !window.TextDecoder || event.defaultPrevented) return;
    event.preventDefault();
    streamChat(form);
  });

  tick();
  setInterval(tick, 1000);
  live();
})();
