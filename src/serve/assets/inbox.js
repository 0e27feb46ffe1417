// Follows the ledger: when any process logs or answers a question, the inbox changes
// within a second, without a reload. Questions a person has started on are kept until
// they submit; the page works without this file (plain forms).
"use strict";

(function () {
  const list = document.getElementById("questions");
  if (!list) return;
  let seq = Number(document.body.dataset.seq || "0");

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
    const old = new Map(Array.from(list.children).map((el) => [el.id, el]));
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
  }

  async function follow() {
    for (;;) {
      try {
        const response = await fetch("/api/changes?since=" + seq, { credentials: "same-origin" });
        if (!response.ok) throw new Error("changes " + response.status);
        const body = await response.json();
        if (body.seq > seq) {
          seq = body.seq;
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
