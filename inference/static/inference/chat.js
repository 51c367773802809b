// The endpoint page's chat box: POSTs the conversation to REST's invoke (session + CSRF) with
// stream: true and appends each server-sent delta as it arrives. A file, not inline: the portal's
// Content-Security-Policy allows scripts from the app only.
(function () {
  const form = document.getElementById("chat-form");
  const log = document.getElementById("chat-log");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const messages = [];
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    const input = document.getElementById("chat-input");
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    messages.push({role: "user", content: text});
    const you = document.createElement("p"); you.className = "chat-user"; you.textContent = text; log.appendChild(you);
    const answer = document.createElement("p"); answer.className = "chat-answer"; log.appendChild(answer);
    const response = await fetch(form.dataset.invokeUrl, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
      body: JSON.stringify({messages: messages, stream: true, max_tokens: 128}),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      answer.textContent = (body.error && body.error.message) || ("Error " + response.status);
      answer.classList.add("error");
      return;
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const line = buffer.slice(0, cut).trim(); buffer = buffer.slice(cut + 2);
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        const delta = JSON.parse(line.slice(6)).choices[0].delta || {};
        if (delta.content) answer.textContent += delta.content;
      }
    }
    answer.dataset.done = "true";
    messages.push({role: "assistant", content: answer.textContent});
  });
})();
