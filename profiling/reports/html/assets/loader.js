/* Unpacks a stagezoo page's plotly.js and its data, which the page holds gzip-compressed and
   base64-encoded (profiling/reports/html/packing.py), with the browser's own
   DecompressionStream, both at once; puts the data back into its element as JSON and each
   packed section's body (the data's packed_html) into its slot, runs plotly.js, then the
   page's script. Records in <body data-charts-ms> when the charts were
   drawn (ms after the page started loading). */
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
  function unpack(id, what) {
    const packed = document.getElementById(id).textContent.trim();
    return fetch("data:application/octet-stream;base64," + packed).then((response) =>
      new Response(response.body.pipeThrough(new DecompressionStream("gzip"))).text()
    ).catch((error) => {
      throw new Error(what + " could not be unpacked: " + error);
    });
  }
  Promise.all([unpack("plotly-gzip", "plotly.js"), unpack("report-data", "the page's data")])
    .then(([plotly, data]) => {
      body.dataset.unpackedMs = String(Math.round(performance.now()));
      const element = document.getElementById("report-data");
      element.type = "application/json";
      element.textContent = data;
      const packed = JSON.parse(data).packed_html || {};
      document.querySelectorAll("[data-packed]").forEach((slot) => {
        if (slot.dataset.packed in packed) slot.outerHTML = packed[slot.dataset.packed];
      });
      run(plotly);
      body.dataset.plotlyMs = String(Math.round(performance.now()));
      run(document.getElementById("report-script").textContent);
    }).catch((error) => {
      body.dataset.errors = "1";
      const box = document.getElementById("report-errors");
      box.hidden = false;
      box.textContent = "script error: " + (error && error.message || error);
    });
})();
