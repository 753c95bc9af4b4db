// Progressive enhancement only: every page works without this file.
// 1. An element marked data-live="<url>" is kept up to date: its HTML is fetched again from
//    that URL (a fragment the server renders) and swapped in when it changed, every data-every
//    seconds (what no event tells, such as a delivery's evaluation). With the event stream (body
//    data-stream="<url>", Server-Sent Events), each event refreshes at once as well. A fragment
//    holding [data-final] is done (a finished run): it is no longer refreshed.
// 2. A form marked data-confirm asks before it is sent (replays create new deliveries; cancel).
"use strict";
(() => {
  const live = [];

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
          part.element.innerHTML = html;
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
