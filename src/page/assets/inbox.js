// The inbox, made quicker to answer from: keyboard answering, answers sent without a
// reload (the same forms, posted by fetch), the next required question opened after each
// answer, deadlines counted down, and the ledger followed live: when any process logs or
// answers a question, the inbox changes within a second. Questions a person has started
// on are kept until they submit. The page works without this file (plain forms).
"use strict";

(function () {
  const list = document.getElementById("questions");
  if (!list) return;
  let seq = Number(document.body.dataset.seq || "0");
  // The ledger's id: a ledger reset or replaced has another one, and its ids name other
  // questions, so no card of the old one is kept.
  let ledger = document.body.dataset.ledger || "";
  let words = {};
  try {
    words = JSON.parse(document.body.dataset.strings || "{}");
  } catch (err) {
    words = {};
  }
  // Deadlines count down from the server's clock, whatever this device's says.
  const rendered = Date.parse(document.body.dataset.now || "");
  const skew = isNaN(rendered) ? 0 : rendered - Date.now();

  const questions = () => Array.from(list.querySelectorAll("details.question"));
  const isRequired = (q) => q.classList.contains("required");

  // Counts down as the server words it (strings.rs, time_left).
  function timeLeft(seconds) {
    if (seconds <= 0) return words.up || "time is up";
    const d = Math.floor(seconds / 86400);
    const h = Math.floor(seconds / 3600) % 24;
    const m = Math.floor(seconds / 60) % 60;
    const s = seconds % 60;
    const w = (k, fallback) => words[k] || fallback;
    const at = w("in", "in");
    if (d > 0) return `${at} ${d} ${w("d", "d")} ${h} ${w("h", "h")}`;
    if (h > 0) return `${at} ${h} ${w("h", "h")} ${m} ${w("min", "min")}`;
    if (m >= 10) return `${at} ${m} ${w("min", "min")}`;
    if (m > 0) return `${at} ${m} ${w("min", "min")} ${s} ${w("s", "s")}`;
    return `${at} ${s} ${w("s", "s")}`;
  }

  function tick() {
    const now = Date.now() + skew;
    for (const el of document.querySelectorAll("[data-expires]")) {
      const at = Date.parse(el.dataset.expires);
      if (isNaN(at)) continue;
      const seconds = Math.floor((at - now) / 1000);
      const text = timeLeft(seconds);
      if (el.textContent !== text) el.textContent = text;
      el.classList.toggle("soon", seconds < 3600);
    }
  }

  // The question the person is on: the one holding the focus, else the first open one.
  function current() {
    const active = document.activeElement;
    const here = active && active.closest ? active.closest("details.question") : null;
    return here || list.querySelector("details.question[open]");
  }

  // Opens `q` and puts the focus on its line; the one left is closed unless started on.
  function go(q, from) {
    if (!q) return;
    if (from && from !== q && !from.dataset.dirty) from.open = false;
    q.open = true;
    const line = q.querySelector("summary");
    line.focus({ preventScroll: true });
    q.scrollIntoView({ block: "nearest" });
    // Not under the page's sticky header.
    const header = document.querySelector("header.top");
    const below = header ? header.getBoundingClientRect().bottom + 8 : 0;
    const top = line.getBoundingClientRect().top;
    if (top < below) window.scrollBy(0, top - below);
  }

  // Scrolls `el` into sight, below the page's sticky header.
  function unhide(el) {
    el.scrollIntoView({ block: "nearest" });
    const header = document.querySelector("header.top");
    const below = header ? header.getBoundingClientRect().bottom + 8 : 0;
    const top = el.getBoundingClientRect().top;
    if (top < below) window.scrollBy(0, top - below);
  }

  // The next required question after `from` (from the top when none), wrapping around.
  function nextRequired(from) {
    const all = questions();
    const i = from ? all.indexOf(from) : -1;
    const required = all.filter((q) => isRequired(q) && q !== from);
    return required.find((q) => all.indexOf(q) > i) || required[0] || null;
  }

  // Where to go once `q` is settled: the next required one, else the next one.
  function after(q) {
    const all = questions().filter((el) => el !== q);
    const i = questions().indexOf(q);
    return nextRequired(q) || all[i] || all[i - 1] || null;
  }

  function showFlash(fresh) {
    const old = document.getElementById("flash");
    if (old) old.remove();
    if (fresh) list.before(document.adoptNode(fresh));
  }

  // Takes the questions of a freshly rendered inbox, keeping the elements this person has
  // (their choices, what is open) for every question still there.
  function apply(doc) {
    const fresh = doc.getElementById("questions");
    if (!fresh) return;
    // Moving the person's elements into the new groups takes the focus away: it is put back.
    const focused = document.activeElement;
    const same = (doc.body.dataset.ledger || "") === ledger;
    const mine = new Map(same ? questions().map((el) => [el.id, el]) : []);
    const groups = [];
    for (const group of Array.from(fresh.children)) {
      const g = document.adoptNode(group);
      for (const el of Array.from(g.querySelectorAll("details.question"))) {
        const own = mine.get(el.id);
        if (own) {
          el.replaceWith(own);
          mine.delete(el.id);
        } else {
          el.open = false;
        }
      }
      groups.push(g);
    }
    for (const el of mine.values()) {
      // Someone else settled it: keep it only if this person has started on it (their
      // submit then says what is on record).
      if (!el.dataset.dirty) continue;
      const stage = el.closest("section.stage");
      const name = stage ? stage.dataset.stage : "";
      let home = groups.find((g) => g.dataset.stage === name);
      if (!home) {
        home = stage ? stage.cloneNode(false) : document.createElement("section");
        groups.push(home);
      }
      home.append(el);
    }
    list.replaceChildren(...groups);
    if (focused && focused !== document.activeElement && focused.isConnected) {
      focused.focus({ preventScroll: true });
    }
    for (const id of ["summary", "empty", "next-required"]) {
      const here = document.getElementById(id);
      const there = doc.getElementById(id);
      if (here && there) {
        here.textContent = there.textContent;
        here.hidden = there.hidden;
      }
    }
    const title = doc.querySelector("title");
    if (title) document.title = title.textContent;
    seq = Number(doc.body.dataset.seq || seq);
    ledger = doc.body.dataset.ledger || "";
    tick();
  }

  async function refresh() {
    const response = await fetch(window.location.pathname, { credentials: "same-origin" });
    if (!response.ok) throw new Error("inbox " + response.status);
    apply(new DOMParser().parseFromString(await response.text(), "text/html"));
  }

  // Posts a question's form as the browser would, without leaving the page; the inbox it
  // answers with says what was recorded.
  async function send(form, submitter) {
    if (form.dataset.busy) return;
    const q = form.closest("details.question");
    const action =
      (submitter && submitter.getAttribute("formaction")) || form.getAttribute("action");
    form.dataset.busy = "1";
    try {
      const response = await fetch(action, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        credentials: "same-origin",
      });
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      const flash = doc.getElementById("flash");
      showFlash(flash);
      if (q && flash && flash.classList.contains("done")) {
        const next = after(q);
        q.remove();
        apply(doc);
        if (next && next.isConnected) go(next, null);
      } else {
        apply(doc);
        // Refused: the person stays on the card, and reads why there, not at the top of
        // the page (which the sticky header may cover).
        const shown = document.getElementById("flash");
        if (shown && q && q.isConnected) {
          q.open = true;
          const body = q.querySelector(".body");
          if (body) body.prepend(shown);
        }
        if (shown) unhide(shown);
      }
    } catch (err) {
      // The page as it works without this file.
      form.action = action;
      HTMLFormElement.prototype.submit.call(form);
    } finally {
      delete form.dataset.busy;
    }
  }

  list.addEventListener("submit", (e) => {
    e.preventDefault();
    send(e.target, e.submitter);
  });

  const started = (e) => {
    const q = e.target.closest("details.question");
    if (q) q.dataset.dirty = "1";
  };
  list.addEventListener("input", started);
  list.addEventListener("change", started);

  const answerForm = (q) => q && q.querySelector("form.answer");

  function submitAnswer(q, button) {
    const form = answerForm(q);
    if (!form || !q.open) return;
    if (button) form.requestSubmit(button);
    else form.requestSubmit();
  }

  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.defaultPrevented) return;
    const target = e.target;
    const q = current();
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      // In a skip, decline or vote form's field, it sends that form, as Enter does there;
      // anywhere else in a question, its answer.
      const own = target.closest ? target.closest("form") : null;
      if (own && !own.matches("form.answer")) {
        e.preventDefault();
        own.requestSubmit();
      } else if (q) {
        e.preventDefault();
        submitAnswer(q);
      }
      return;
    }
    if (e.ctrlKey || e.metaKey) return;
    if (target.matches && target.matches("textarea, input[type=text], input:not([type])")) return;
    const all = questions();
    const i = q ? all.indexOf(q) : -1;
    switch (e.key) {
      case "j":
        e.preventDefault();
        go(all[i + 1] || all[i] || all[0], q);
        return;
      case "k":
        e.preventDefault();
        go(all[i - 1] || all[0], q);
        return;
      case "r":
        e.preventDefault();
        go(nextRequired(q), q);
        return;
      case "o":
        if (!q) return;
        e.preventDefault();
        if (q.open) {
          q.open = false;
          q.querySelector("summary").focus();
        } else {
          go(q, null);
        }
        return;
      case "a": {
        const accept = q && q.open && q.querySelector("form.answer button.accept");
        if (!accept) return;
        e.preventDefault();
        submitAnswer(q, accept);
        return;
      }
      case "Enter":
        if (target.matches && target.matches("form.answer input[type=radio], form.answer input[type=checkbox]")) {
          e.preventDefault();
          submitAnswer(q);
        }
        return;
      default:
        break;
    }
    if (/^[1-9]$/.test(e.key) && q) {
      if (!q.open) go(q, null);
      const input = q.querySelectorAll("form.answer fieldset.options input")[Number(e.key) - 1];
      if (!input) return;
      e.preventDefault();
      if (input.type === "radio") input.checked = true;
      else input.checked = !input.checked;
      input.focus();
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
  });

  const jump = document.getElementById("next-required");
  if (jump) {
    jump.addEventListener("click", (e) => {
      e.preventDefault();
      const q = current();
      go(nextRequired(q), q);
    });
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  async function follow() {
    for (;;) {
      try {
        const query = "since=" + seq + "&ledger=" + encodeURIComponent(ledger);
        const response = await fetch("/api/changes?" + query, { credentials: "same-origin" });
        if (!response.ok) throw new Error("changes " + response.status);
        const body = await response.json();
        if (body.seq !== seq || (body.ledger || "") !== ledger) {
          await refresh();
        }
      } catch (err) {
        await sleep(2000);
      }
    }
  }

  const keys = document.getElementById("keys");
  if (keys) keys.hidden = false;
  tick();
  setInterval(tick, 1000);
  // A link to one question (`URL#q-ID`, as `questions mcp` sends people) opens its card.
  // On a reload of such a link the browser would put back the old scroll offset after
  // this script has scrolled, measured on a page whose cards were not open yet: the card
  // is scrolled to here alone.
  if (window.location.hash && "scrollRestoration" in history) history.scrollRestoration = "manual";
  function opened() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const q = id ? document.getElementById(id) : null;
    if (!q || !q.matches("details.question")) return false;
    go(q, current());
    // Once more after the browser's own jump to the anchor, which puts the card's top
    // under the sticky header.
    requestAnimationFrame(() => go(q, null));
    // And once the page has loaded, when what loaded last may have moved it.
    if (document.readyState !== "complete") {
      window.addEventListener("load", () => go(q, null), { once: true });
    }
    return true;
  }
  window.addEventListener("hashchange", opened);
  const open = list.querySelector("details.question[open]");
  if (!opened() && open) open.querySelector("summary").focus({ preventScroll: true });
  document.body.dataset.live = "1";
  follow();
})();
