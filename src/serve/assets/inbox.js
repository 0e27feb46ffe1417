// Follows the ledger: when any process logs or answers a question, the inbox changes
// within a second, without a reload. Questions a person has started on are kept until
// they submit; the page works without this file (plain forms).
"use strict";

(function () {
  const list = document.getElementById("questions");
  if (!list) return;
  let seq = Number(document.body.dataset.seq || "0");
  // The ledger's id: a ledger reset or replaced has another one, and its ids name other
  // questions, so no card of the old one is kept.
  let ledger = document.body.dataset.ledger || "";

  list.addEventListener("input", (e) => {
    const card = e.target.closest("article");
    if (card) card.dataset.dirty = "1";
  });

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  async function refresh() {
    const response = await fetch(window.location.pathname, { credentials: "same-origin" });
    if (!response.ok) throw new Error("inbox " + response.status);
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = doc.getElementById("questions");
    if (!fresh) return;
    const same = (doc.body.dataset.ledger || "") === ledger;
    const old = new Map(same ? Array.from(list.children).map((el) => [el.id, el]) : []);
    const next = [];
    for (const el of Array.from(fresh.children)) {
      const mine = old.get(el.id);
      next.push(mine || document.adoptNode(el));
      old.delete(el.id);
    }
    for (const el of old.values()) {
      // Someone else settled it: keep it only if this person has started on it (their
      // submit then says what is on record).
      if (el.dataset.dirty) next.push(el);
    }
    list.replaceChildren(...next);
    for (const id of ["summary", "empty"]) {
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
  }

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

  document.body.dataset.live = "1";
  follow();
})();
