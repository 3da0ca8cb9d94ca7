// Plateau console: the little the pages need beyond HTML. Copy buttons
// copy the input they name; upload forms send the chosen file's bytes to
// the console, which stores it through a presigned URL.
"use strict";
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const input = document.getElementById(button.dataset.copy);
  if (!input) return;
  input.select();
  const done = () => { button.firstChild.textContent = "Copied"; };
  if (navigator.clipboard) {
    navigator.clipboard.writeText(input.value).then(done, () => { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.matches("form[data-upload]")) return;
  event.preventDefault();
  const status = form.querySelector("[role=status]");
  const file = form.querySelector("input[type=file]").files[0];
  if (!file) { status.textContent = "Choose a file first."; return; }
  const key = form.querySelector("[name=key]").value || file.name;
  const params = new URLSearchParams({ key, accessKeyId: form.querySelector("[name=accessKeyId]").value });
  status.textContent = "Uploading " + key + "…";
  const response = await fetch(form.action + "?" + params, {
    method: "PUT",
    headers: { "x-csrf-token": form.querySelector("[name=csrf]").value, "content-type": file.type || "application/octet-stream" },
    body: file,
  });
  status.textContent = response.ok ? "Uploaded " + key + "." : "Upload failed: " + await response.text();
});
// A page with [data-follow] (an app's logs) follows itself: every three
// seconds it fetches itself again and swaps in its [data-live] elements,
// keeping a log scrolled to its end when it was there. A button stops and
// starts it (WCAG 2.2.2); without script the page has a refresh link.
const follow = document.querySelector("[data-follow]");
if (follow) {
  let timer = null;
  const toggle = document.createElement("button");
  toggle.type = "button";
  const status = document.createElement("p");
  status.className = "hint";
  const tick = async () => {
    try {
      const response = await fetch(location.href, { credentials: "same-origin" });
      if (!response.ok) { status.textContent = "Could not refresh (" + response.status + ")."; return; }
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      for (const fresh of page.querySelectorAll("[data-live][id]")) {
        const old = document.getElementById(fresh.id);
        if (!old || old.innerHTML === fresh.innerHTML) continue;
        const atEnd = old.scrollTop + old.clientHeight >= old.scrollHeight - 4;
        old.innerHTML = fresh.innerHTML;
        if (old.hasAttribute("data-tail") && atEnd) old.scrollTop = old.scrollHeight;
      }
      status.textContent = "Updated at " + new Date().toLocaleTimeString() + ".";
    } catch (e) {
      status.textContent = "Could not refresh: " + e.message;
    }
  };
  const set = (on) => {
    if (timer) clearInterval(timer);
    timer = on ? setInterval(tick, 3000) : null;
    toggle.textContent = on ? "Stop following" : "Follow the logs";
  };
  toggle.addEventListener("click", () => set(!timer));
  follow.replaceChildren(toggle, status);
  for (const log of document.querySelectorAll("[data-tail]")) log.scrollTop = log.scrollHeight;
  set(true);
}
