// grade review: save each click and comment at once, and move through the class by keyboard.
// Served by the app itself (Content-Security-Policy: script-src 'self'); learner text is only
// ever set as textContent, never as HTML.
"use strict";

(function () {
  const token = document.querySelector('meta[name="review-token"]').content;
  const form = document.getElementById("review-form");
  // (form.action would be its buttons named "action")
  const target = form ? form.getAttribute("action") : "";
  const comment = document.getElementById("comment");
  const help = document.getElementById("help");
  let chain = Promise.resolve(); // saves go one after the other, in the order made
  let dirty = false; // the comment changed since the last save was sent
  let timer = null;

  function setText(id, text) {
    const el = document.getElementById(id);
    if (el) el.textContent = text;
  }

  function state() {
    return form ? form.dataset.state : "";
  }

  function entered(action) {
    const items = Array.from(form.querySelectorAll('input[name="item"]:checked'),
      (box) => box.value);
    return { items: items, comment: comment ? comment.value : "", action: action };
  }

  function show(answer) {
    setText("final", answer.final);
    setText("score", answer.score);
    setText("done", String(answer.done));
    const meter = document.getElementById("final-meter");
    if (meter) meter.value = parseFloat(answer.final);
    const marks = document.getElementById("marks");
    if (marks) {
      marks.replaceChildren(...answer.marks.map((text) => {
        const li = document.createElement("li");
        li.textContent = text;
        return li;
      }));
    }
    form.dataset.state = answer.reviewed ? "reviewed" : "";
    const badge = document.getElementById("reviewed");
    badge.textContent = answer.reviewed ? "✓ reviewed" : "not reviewed";
    badge.className = "badge " + (answer.reviewed ? "s-passed" : "s-not_run");
    document.getElementById("unreview").hidden = !answer.reviewed;
    const stale = document.getElementById("stale");
    if (stale) stale.remove(); // saved against the current result
    const status = document.getElementById("status");
    status.classList.remove("error");
    status.textContent = ["Saved."].concat(answer.notices).join(" ");
  }

  function failed(text) {
    const status = document.getElementById("status");
    status.classList.add("error");
    status.textContent = text;
  }

  // Queue a save of what the form holds now; resolves once it is answered.
  function save(action) {
    if (!form) return Promise.resolve();
    const body = JSON.stringify(entered(action || "save"));
    dirty = false;
    clearTimeout(timer);
    setText("status", "Saving…");
    chain = chain.then(() => fetch(target, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Review-Token": token },
      body: body,
    }).then((response) => response.json().then((answer) => {
      if (response.ok && answer.saved) show(answer);
      else failed(answer.error || ("Not saved (" + response.status + ")."));
    })).catch(() => failed("Not saved: the grade review server does not answer.")));
    return chain;
  }

  function flush() {
    return dirty ? save("save") : chain;
  }

  function go(id) {
    const link = document.getElementById(id);
    if (link && link.href) flush().then(() => { window.location.href = link.href; });
  }

  if (form) {
    form.addEventListener("change", (event) => {
      if (event.target.name === "item") save("save");
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const action = event.submitter ? event.submitter.value : "save";
      save(action === "unreview" ? "unreview" : "save").then(() => {
        if (action === "next") go("next-unreviewed");
      });
    });
  }
  if (comment) {
    comment.addEventListener("input", () => {
      dirty = true;
      clearTimeout(timer);
      timer = setTimeout(() => { if (dirty) save("save"); }, 700);
    });
    comment.addEventListener("change", () => { if (dirty) save("save"); });
  }
  // leaving the page with a comment not sent yet: send it on the way out
  window.addEventListener("pagehide", () => {
    if (!dirty || !form) return;
    const data = new FormData(form);
    data.set("action", "save");
    navigator.sendBeacon(target, data);
    dirty = false;
  });

  function toggleHelp() {
    if (help.open) help.close();
    else help.showModal();
  }
  document.getElementById("help-button").addEventListener("click", toggleHelp);

  const moves = { j: "next", ArrowRight: "next", k: "prev", ArrowLeft: "prev",
    n: "next-unreviewed" };
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = event.target.closest && event.target.closest("textarea, input[type=text]");
    if (typing) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.key === "?") { toggleHelp(); event.preventDefault(); return; }
    if (help.open) return;
    if (moves[event.key]) { go(moves[event.key]); event.preventDefault(); return; }
    if (!form) return;
    if (/^[1-9]$/.test(event.key)) {
      const box = form.querySelector('input[name="item"][data-key="' + event.key + '"]');
      if (box) { box.checked = !box.checked; save("save"); event.preventDefault(); }
    } else if (event.key === "c" && comment) {
      comment.focus();
      event.preventDefault();
    } else if (event.key === "r") {
      save(state() === "reviewed" ? "unreview" : "save");
      event.preventDefault();
    }
  });
})();
