// The job page: a live log viewer over the job's socket (follow, pause, pod filter, search, download; a
// reload replays from the start, so nothing is lost) and the loss/throughput charts from the metrics API.
(function () {
  "use strict";
  const logs = document.getElementById("logs");
  const view = document.getElementById("log-view");
  const follow = document.getElementById("log-follow");
  const pauseButton = document.getElementById("log-pause");
  const podSelect = document.getElementById("log-pod");
  const search = document.getElementById("log-search");
  const count = document.getElementById("log-count");
  const lines = [];
  const pods = new Set();
  let paused = false;
  let pending = [];
  let last = 0;
  let ended = false;

  function visible(line) {
    const pod = podSelect.value;
    const term = search.value.toLowerCase();
    return (!pod || line.pod === pod) && (!term || line.text.toLowerCase().includes(term));
  }
  function render(line) {
    return `[${line.pod}] ${line.text}\n`;
  }
  function redraw() {
    view.textContent = lines.filter(visible).map(render).join("");
    if (follow.checked) view.scrollTop = view.scrollHeight;
  }
  // frames: socket frames {lines: [{seq, pod, ts, text}], next}, in order.
  function add(frames) {
    let fresh = "";
    for (const frame of frames) {
      for (const line of frame.lines) {
        if (line.seq <= last) continue;  // never twice
        last = line.seq;
        lines.push(line);
        if (!pods.has(line.pod)) {
          pods.add(line.pod);
          const option = document.createElement("option");
          option.value = option.textContent = line.pod;
          podSelect.appendChild(option);
        }
        if (visible(line)) fresh += render(line);
      }
      if (frame.next > last) last = frame.next;  // a reconnect resumes after every line the socket passed
    }
    if (fresh) view.appendChild(document.createTextNode(fresh));
    count.textContent = `${lines.length} lines`;
    if (follow.checked) view.scrollTop = view.scrollHeight;
  }
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}${logs.dataset.socket}?after=${last}`);
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data);
      if (message.status) { ended = true; logs.dataset.ended = message.status; return; }
      if (paused) pending.push(message); else add([message]);  // a frame of lines
    };
    socket.onclose = (event) => {
      if (event.code === 4404 || event.code === 4401) { view.textContent = "This job's logs are not available."; return; }
      if (!ended) setTimeout(connect, 1000);  // reconnect with after=last: nothing lost, nothing repeated
    };
  }
  pauseButton.addEventListener("click", () => {
    paused = !paused;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    if (!paused) { add(pending); pending = []; }
  });
  podSelect.addEventListener("change", redraw);
  search.addEventListener("input", redraw);
  document.getElementById("log-download").addEventListener("click", async () => {
    let after = 0, text = "";
    for (;;) {
      const page = await (await fetch(`${logs.dataset.rest}?after=${after}&limit=5000`, {credentials: "same-origin"})).json();
      if (!page.lines.length) break;
      text += page.lines.map((l) => `${l.ts || ""} [${l.pod}] ${l.text}\n`).join("");
      after = page.next;
    }
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], {type: "text/plain"}));
    link.download = `job-${logs.dataset.job}.log`;
    link.click();
  });
  connect();

  // Charts
  const charts = document.getElementById("charts");
  const lossCanvas = document.getElementById("loss-chart");
  if (!lossCanvas || typeof Chart === "undefined") return;
  const made = {};
  function chart(id, label) {
    return new Chart(document.getElementById(id), {
      type: "line",
      data: {datasets: [{label, data: [], borderWidth: 1.5, pointRadius: 0, tension: 0.2}]},
      options: {animation: false, parsing: false, scales: {x: {type: "linear", title: {display: true, text: "step"}}}},
    });
  }
  async function refresh() {
    try {
      const answer = await fetch(charts.dataset.metricsUrl, {credentials: "same-origin"});
      if (answer.ok) {
        const metrics = (await answer.json()).metrics || {};
        for (const [key, id] of [["loss", "loss-chart"], ["throughput", "throughput-chart"]]) {
          const series = metrics[key] || [];
          if (!series.length) continue;
          made[key] = made[key] || chart(id, key);
          made[key].data.datasets[0].data = series.map((p) => ({x: p.step, y: p.value}));
          made[key].update();
          charts.dataset[key] = String(series.length);
        }
        if (metrics.loss && metrics.loss.length) document.getElementById("metrics-note").textContent = `${metrics.loss.length} loss points`;
      }
    } catch (e) { /* the next refresh tries again */ }
    const status = (document.getElementById("job-status") || {}).dataset || {};
    if (!["succeeded", "failed", "cancelled"].includes(status.status) || !charts.dataset.final) {
      if (["succeeded", "failed", "cancelled"].includes(status.status)) charts.dataset.final = "1";
      setTimeout(refresh, 3000);
    }
  }
  refresh();
})();
