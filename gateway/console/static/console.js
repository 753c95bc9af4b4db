// Progressive enhancement only: every page works without this file.
// 1. An element marked data-live="<url>" is kept up to date: its HTML is fetched again from
//    that URL (a fragment the server renders) and swapped in when it changed. With the event
//    stream (body data-stream="<url>", Server-Sent Events) each event refreshes at once; without
//    it, or while it is down, every data-every seconds. A fragment holding [data-final] is done
//    (a finished run): it is no longer refreshed.
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

  let streaming = false;
  const listen = (url) => {
    if (!("EventSource" in window)) return;
    const source = new EventSource(url);
    let pending = null;
    const soon = () => {
      // a burst of events (a run's life) makes one refresh
      if (pending === null) pending = setTimeout(() => { pending = null; refreshAll(); }, 150);
    };
    source.onopen = () => { streaming = true; };
    source.onmessage = soon;
    for (const type of (document.body.dataset.streamTypes || "").split(",")) {
      if (type) source.addEventListener(type, soon);
    }
    source.onerror = () => { streaming = false; };  // EventSource reconnects by itself
  };

  document.addEventListener("DOMContentLoaded", () => {
    for (const element of document.querySelectorAll("[data-live]")) {
      const part = { element, url: element.dataset.live, html: null, done: false, busy: false };
      part.done = element.querySelector("[data-final]") !== null;
      live.push(part);
      const every = Number(element.dataset.every || 3) * 1000;
      // with the stream up, the timer is a slow safety net; without it, the refresh itself
      let ticks = 0;
      setInterval(() => {
        ticks += 1;
        if (!streaming || ticks % 5 === 0) refresh(part);
      }, every);
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
