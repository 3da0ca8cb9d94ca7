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
