/* Loads a stagezoo page's plotly.js, which the page holds gzip-compressed and base64-encoded
   (a third of its size), with the browser's own DecompressionStream; then runs the page's
   script. Records in <body data-charts-ms> when the charts were drawn (ms after the page
   started loading). */
(function () {
  "use strict";
  const body = document.body;
  const watch = new MutationObserver(() => {
    if (body.dataset.chartsDrawn !== undefined) {
      body.dataset.chartsMs = String(Math.round(performance.now()));
      watch.disconnect();
    }
  });
  watch.observe(body, { attributes: true, attributeFilter: ["data-charts-drawn"] });
  function run(code) {
    const script = document.createElement("script");
    script.textContent = code;
    body.appendChild(script);
  }
  const packed = document.getElementById("plotly-gzip").textContent.trim();
  fetch("data:application/octet-stream;base64," + packed).then((response) =>
    new Response(response.body.pipeThrough(new DecompressionStream("gzip"))).text()
  ).then((plotly) => {
    body.dataset.unpackedMs = String(Math.round(performance.now()));
    run(plotly);
    body.dataset.plotlyMs = String(Math.round(performance.now()));
    run(document.getElementById("report-script").textContent);
  }).catch((error) => {
    body.dataset.errors = "1";
    const box = document.getElementById("report-errors");
    box.hidden = false;
    box.textContent = "script error: plotly.js could not be unpacked: " + error;
  });
})();
