// Progressive enhancement only: every page works without this file.
// 1. A deliveries table marked data-live refreshes its rows every data-every seconds.
// 2. A form marked data-confirm asks before it is sent (replays create new deliveries).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const body of document.querySelectorAll("tbody[data-live]")) {
    const every = Number(body.dataset.every || 3) * 1000;
    const refresh = async () => {
      try {
        const answer = await fetch(body.dataset.live, { credentials: "same-origin" });
        if (answer.ok && answer.headers.get("content-type").startsWith("text/html")) {
          body.innerHTML = await answer.text();
        }
      } catch (_) {
        // offline for a moment: the next tick tries again
      }
    };
    setInterval(refresh, every);
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
