// The inbox inside an MCP client's chat (MCP Apps). The host shows this page in a
// sandboxed frame and speaks JSON-RPC with it over postMessage: the page introduces
// itself (ui/initialize), then each form it holds, instead of posting to a server, calls
// the MCP server's answer_in_app tool through the host (tools/call).
(function () {
  "use strict";
  var next = 1;
  var waiting = {};

  function send(message) {
    window.parent.postMessage(message, "*");
  }

  function request(method, params) {
    var id = next++;
    return new Promise(function (resolve, reject) {
      waiting[id] = { resolve: resolve, reject: reject };
      send({ jsonrpc: "2.0", id: id, method: method, params: params });
    });
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) return;
    var message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined && waiting[message.id]) {
      var w = waiting[message.id];
      delete waiting[message.id];
      if (message.error) w.reject(message.error);
      else w.resolve(message.result);
    } else if (message.method !== undefined && message.id !== undefined) {
      // A request of the host's (a teardown): nothing to keep, done at once.
      send({ jsonrpc: "2.0", id: message.id, result: {} });
    }
  });

  var ready = request("ui/initialize", {
    appInfo: { name: "questions", version: "1" },
    appCapabilities: {},
    protocolVersion: "2026-01-26",
  }).then(function () {
    send({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} });
  });

  function flash(text, failed) {
    var p = document.getElementById("flash");
    if (!p) {
      p = document.createElement("p");
      p.id = "flash";
      var main = document.querySelector("main");
      main.insertBefore(p, main.firstChild);
    }
    p.className = "flash " + (failed ? "failed" : "done");
    p.setAttribute("role", failed ? "alert" : "status");
    p.textContent = text;
  }

  var done = { answer: "answered", accept: "answered", skip: "skipped", decline: "declined" };

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var button = event.submitter;
    var target = (button && button.getAttribute("formaction")) || form.getAttribute("action") || "";
    var m = /^\/q\/(\d+)\/(answer|accept|skip|decline|approve|reject)$/.exec(target);
    if (!m) return;
    event.preventDefault();
    var data = new FormData(form);
    var args = { id: Number(m[1]), action: m[2] };
    ["ledger", "fingerprint", "answer", "reason"].forEach(function (name) {
      var value = data.get(name);
      if (value) args[name] = String(value);
    });
    var chosen = data.getAll("select").map(String);
    if (chosen.length) args.select = chosen;
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    ready
      .then(function () {
        return request("tools/call", { name: "answer_in_app", arguments: args });
      })
      .then(function (result) {
        var doc = (result && result.structuredContent) || {};
        if (result && result.isError) {
          buttons.forEach(function (b) { b.disabled = false; });
          flash(doc.error || "not recorded", true);
          return;
        }
        var item = document.getElementById("q-" + args.id);
        if (item) {
          item.classList.add("settled");
          item.setAttribute("data-status", done[args.action] || "answered");
          item.open = false;
        }
        flash("#" + args.id + " " + (done[args.action] || "recorded"), false);
      })
      .catch(function (error) {
        buttons.forEach(function (b) { b.disabled = false; });
        flash((error && error.message) || String(error), true);
      });
  });
})();
