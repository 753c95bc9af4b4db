// Progressive enhancement only: every page works without this file.
// 1. An element marked data-live="<url>" is kept up to date: its HTML is fetched again from
//    that URL (a fragment the server renders) and swapped in when it changed, every data-every
//    seconds (what no event tells, such as a delivery's evaluation). With the event stream (body
//    data-stream="<url>", Server-Sent Events), each event refreshes at once as well. A fragment
//    holding [data-final] is done (a finished run): it is no longer refreshed.
//    The keyboard focus stays where it was across a swap, and what changed is announced.
// 2. A form marked data-confirm asks before it is sent (replays create new deliveries; cancel).
"use strict";
(() => {
  const live = [];
  const FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";

  // Swapping a part's HTML would drop the keyboard focus when it is inside: the element that
  // had it gets it back in the new HTML (the same link or button, else the one in its place).
  const swap = (element, html) => {
    const active = document.activeElement;
    const inside = active && active !== element && element.contains(active);
    const before = inside ? [...element.querySelectorAll(FOCUSABLE)] : [];
    const index = before.indexOf(active);
    const same = (e) => e.tagName === active.tagName && e.textContent === active.textContent &&
      e.getAttribute("href") === active.getAttribute("href");
    element.innerHTML = html;
    if (!inside) return;
    const after = [...element.querySelectorAll(FOCUSABLE)];
    const next = after.find(same) || after[Math.min(index, after.length - 1)];
    if (next) next.focus({ preventScroll: true });
  };

  // What changed in a swap, told to screen readers in one short sentence (the page's
  // role=status element), rather than the whole part read again: the texts of its
  // [data-announce="<label>"] elements, without their decorations (aria-hidden shapes).
  const said = (element) => {
    const told = new Map();
    element.querySelectorAll("[data-announce]").forEach((e, i) => {
      const copy = e.cloneNode(true);
      copy.querySelectorAll("[aria-hidden=true]").forEach((d) => d.remove());
      told.set(`${i}:${e.dataset.announce}`, `${e.dataset.announce}: ${copy.textContent.trim()}`);
    });
    return told;
  };
  const announce = (before, after) => {
    const news = [...after].filter(([key, text]) => before.get(key) !== text).map(([, t]) => t);
    const status = document.getElementById("announce");
    if (news.length && status) status.textContent = news.join(". ");
  };

  const refresh = async (part) => {
    if (part.done || part.busy) return;
    part.busy = true;
    try {
      const answer = await fetch(part.url, { credentials: "same-origin" });
      const type = answer.headers.get("content-type") || "";
      if (answer.ok && type.startsWith("text/html")) {
        const html = await answer.text();
        if (html !== part.html) {
          part.html = html;
          const before = said(part.element);
          swap(part.element, html);
          announce(before, said(part.element));
        }
        part.done = part.element.querySelector("[data-final]") !== null;
      }
    } catch (_) {
      // offline for a moment: the next tick tries again
    } finally {
      part.busy = false;
    }
  };
  const refreshAll = () => live.forEach(refresh);

  const listen = (url) => {
    if (!("EventSource" in window)) return;
    const source = new EventSource(url);
    let pending = null;
    const soon = () => {
      // a burst of events (a run's life) makes one refresh
      if (pending === null) pending = setTimeout(() => { pending = null; refreshAll(); }, 150);
    };
    source.onmessage = soon;
    for (const type of (document.body.dataset.streamTypes || "").split(",")) {
      if (type) source.addEventListener(type, soon);
    }
    // EventSource reconnects by itself after an error; the timers go on meanwhile
  };

  document.addEventListener("DOMContentLoaded", () => {
    for (const element of document.querySelectorAll("[data-live]")) {
      const part = { element, url: element.dataset.live, html: null, done: false, busy: false };
      part.done = element.querySelector("[data-final]") !== null;
      live.push(part);
      setInterval(() => refresh(part), Number(element.dataset.every || 3) * 1000);
    }
    if (live.length && document.body.dataset.stream) listen(document.body.dataset.stream);
  });

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm &&
        !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });
})();
