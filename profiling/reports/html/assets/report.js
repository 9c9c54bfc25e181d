/* The script of a stagezoo report page: draws the charts of the page's data with plotly.js,
   links them (hovering or clicking a stage highlights it in every chart and in the table),
   sorts and filters the tables, and draws the sweep's metric-against-option chart.
   Errors are listed at the foot of the page and counted in <body data-errors>. */
(function () {
  "use strict";
  const body = document.body;
  let errorCount = 0;
  function reportError(text) {
    errorCount += 1;
    body.dataset.errors = String(errorCount);
    const box = document.getElementById("report-errors");
    if (box) {
      box.hidden = false;
      const line = document.createElement("p");
      line.textContent = "script error: " + text;
      box.appendChild(line);
    }
  }
  const consoleError = console.error.bind(console);
  console.error = (...parts) => { reportError(parts.join(" ")); consoleError(...parts); };
  window.addEventListener("error", (event) => reportError(event.message));
  window.addEventListener("unhandledrejection", (event) => reportError(String(event.reason)));

  const data = JSON.parse(document.getElementById("report-data").textContent);
  const plotConfig = { displaylogo: false, responsive: true };
  const charts = [];

  function keysOf(trace) {
    if (!trace.customdata) return null;
    return Array.from(trace.customdata, (c) => (Array.isArray(c) ? c[0] : c));
  }

  /* The key of the stage now highlighted: pinned by a click, shown while hovering. */
  let pinned = null;
  let shown = null;

  function highlightChart(gd, key) {
    gd.data.forEach((trace, index) => {
      const keys = keysOf(trace);
      if (!keys) return;
      if (trace.type === "icicle" || trace.type === "treemap" || trace.type === "sunburst") {
        Plotly.restyle(gd, {
          "marker.line.width": [keys.map((k) => (k === key ? 4 : 1))],
          "marker.line.color": [keys.map((k) => (k === key ? "#111" : "#fff"))],
        }, [index]);
      } else {
        const chosen = [];
        keys.forEach((k, i) => { if (k === key) chosen.push(i); });
        Plotly.restyle(gd, { selectedpoints: [key === null ? null : chosen] }, [index]);
      }
    });
  }

  /* The pinned stage call's detail, written as text (never as HTML). */
  function showDetail(key) {
    const details = data.details || {};
    let panel = document.getElementById("stage-detail");
    if (!panel) {
      panel = document.createElement("aside");
      panel.id = "stage-detail";
      document.body.appendChild(panel);
    }
    panel.hidden = !(key && details[key]);
    if (panel.hidden) return;
    panel.textContent = "";
    const close = document.createElement("button");
    close.textContent = "\u00d7";
    close.title = "unpin";
    close.addEventListener("click", () => { pinned = null; shown = undefined; highlight(null); });
    panel.appendChild(close);
    const list = document.createElement("dl");
    details[key].forEach(([label, value]) => {
      const term = document.createElement("dt");
      term.textContent = label;
      const text = document.createElement("dd");
      text.textContent = value;
      list.append(term, text);
    });
    panel.appendChild(list);
  }

  function highlight(key, source) {
    if (key === shown && source === undefined) return;
    shown = key;
    showDetail(pinned);
    charts.forEach((gd) => { if (gd !== source) highlightChart(gd, key); });
    document.querySelectorAll("tr[data-key]").forEach((row) => {
      row.classList.toggle("highlight", key !== null && row.dataset.key === key);
    });
    const label = document.getElementById("highlighted");
    if (label) label.textContent = key === null ? "none (hover or click a stage)" :
      key.replace(/#0$/, "").replace(/#(\d+)$/, "[$1]");
  }

  function pointKey(event) {
    const point = event.points && event.points[0];
    if (!point) return null;
    const c = point.customdata;
    return Array.isArray(c) ? c[0] : (c === undefined ? null : c);
  }

  function link(gd) {
    gd.on("plotly_hover", (event) => {
      const key = pointKey(event);
      if (key !== null) highlight(key, gd);
    });
    gd.on("plotly_unhover", () => highlight(pinned, gd));
    gd.on("plotly_click", (event) => {
      const key = pointKey(event);
      pinned = key === pinned ? null : key;
      shown = undefined;
      highlight(pinned);
    });
  }

  /* Every axis writes its ticks plainly: 1,000 and 0.001, never 1e+3, 10B or 1e-3. */
  function plainAxes(layout) {
    Object.keys(layout).filter((name) => /^[xy]axis\d*$/.test(name)).forEach((name) => {
      const axis = layout[name];
      if (axis.exponentformat === undefined) axis.exponentformat = "none";
      if (axis.separatethousands === undefined) axis.separatethousands = true;
      if (axis.hoverformat === undefined) axis.hoverformat = ",.3~r";
    });
    return layout;
  }

  function drawChart(id, figure) {
    const gd = document.getElementById(id);
    const layout = plainAxes(Object.assign({ xaxis: {}, yaxis: {} }, figure.layout || {}));
    return Plotly.newPlot(gd, figure.data, layout, plotConfig).then(() => {
      charts.push(gd);
      link(gd);
    });
  }

  function inView(id) {
    const box = document.getElementById(id).getBoundingClientRect();
    return box.top < window.innerHeight && box.bottom > 0;
  }

  /* After the browser has painted what is drawn so far, so that a reader sees each chart
     as it comes rather than all of them at the end. */
  function nextFrame() {
    return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  }

  /* The charts in view first (their time in <body data-view-ms>), then the others one by
     one, each after a frame; each of draws is [id, a function of id that draws it]. */
  function drawCharts(draws) {
    const present = draws.filter(([id]) => document.getElementById(id));
    const first = present.filter(([id]) => inView(id));
    const later = present.filter((entry) => !first.includes(entry));
    return Promise.all(first.map(([id, draw]) => draw(id))).then(() => {
      body.dataset.viewMs = String(Math.round(performance.now()));
      return later.reduce((done, [id, draw]) => done.then(nextFrame).then(() => draw(id)),
        Promise.resolve());
    });
  }

  /* A cell's number: its data-value, else its text where that is a plain number (the page
     leaves out a data-value its text already says: tables.py); else its text. */
  function cellValue(cell) {
    const raw = cell.dataset.value;
    const text = cell.textContent.trim();
    const number = raw !== undefined && raw !== "" ? Number(raw) :
      /^-?\d+(\.\d+)?(e[+-]?\d+)?$/.test(text) ? Number(text) : NaN;
    return Number.isNaN(number) ? text.toLowerCase() : number;
  }

  function sortTable(table, column, header) {
    const descending = header.dataset.sort !== "descending";
    table.querySelectorAll("th").forEach((th) => { delete th.dataset.sort; });
    header.dataset.sort = descending ? "descending" : "ascending";
    const tbody = table.tBodies[0];
    const rows = Array.from(tbody.rows);
    rows.sort((a, b) => {
      const x = cellValue(a.cells[column]);
      const y = cellValue(b.cells[column]);
      const missing = (v) => v === "-" || v === "";
      if (missing(x) !== missing(y)) return missing(x) ? 1 : -1;
      const order = typeof x === "number" && typeof y === "number" ? x - y :
        String(x).localeCompare(String(y), undefined, { numeric: true });
      return descending ? -order : order;
    });
    rows.forEach((row) => tbody.appendChild(row));
  }

  function filterTable(table, text, depth) {
    const needle = text.trim().toLowerCase();
    Array.from(table.tBodies[0].rows).forEach((row) => {
      const name = (row.dataset.name || row.textContent).toLowerCase();
      const deepEnough = depth === "" || Number(row.dataset.depth || 0) <= Number(depth);
      row.hidden = !(name.includes(needle) && deepEnough);
    });
  }

  function setUpTables() {
    document.querySelectorAll("table.sortable").forEach((table) => {
      table.querySelectorAll("thead th").forEach((header, column) => {
        header.addEventListener("click", () => sortTable(table, column, header));
      });
      const controls = document.querySelectorAll(`[data-filters="${table.id}"]`);
      const update = () => {
        const text = document.querySelector(`input[data-filters="${table.id}"]`);
        const depth = document.querySelector(`select[data-filters="${table.id}"]`);
        filterTable(table, text ? text.value : "", depth ? depth.value : "");
      };
      controls.forEach((control) => control.addEventListener("input", update));
      table.querySelectorAll("tr[data-key]").forEach((row) => {
        row.addEventListener("mouseenter", () => highlight(row.dataset.key));
        row.addEventListener("mouseleave", () => highlight(pinned));
        row.addEventListener("click", () => {
          pinned = row.dataset.key === pinned ? null : row.dataset.key;
          shown = undefined;
          highlight(pinned);
        });
      });
    });
  }

  /* The sweep page: any metric of the jobs against any swept option. */
  function drawSweepPicker() {
    const spec = data.sweep_plot;
    const gd = document.getElementById("sweep-metric");
    const xSelect = document.getElementById("sweep-x");
    const ySelect = document.getElementById("sweep-y");
    const draw = () => {
      const x = xSelect.value;
      const y = ySelect.value;
      /* every name as the page's data writes it for a chart (escaped in Python) */
      const xLabel = spec.labels[x];
      const yLabel = spec.labels[y];
      const rows = spec.rows.filter((row) => row[y] !== null && row[y] !== undefined);
      const trace = {
        /* a job named by more than the option on the axis says its name beside its point */
        type: "scatter", mode: spec.options.length > 1 ? "markers+text" : "markers",
        x: rows.map((r) => r.shown[x]),
        y: rows.map((r) => r[y]), text: rows.map((r) => r.shown.job), textposition: "top center",
        customdata: rows.map((r) => r.job), marker: { size: 10 },
        /* the forward's whiskers: the interval of its median */
        error_y: y === "forward ms" && rows.some((r) => r.whisker) ? {
          type: "data", symmetric: false,
          array: rows.map((r) => (r.whisker ? r.whisker[1] - r[y] : 0)),
          arrayminus: rows.map((r) => (r.whisker ? r[y] - r.whisker[0] : 0)),
        } : undefined,
        hovertemplate: "%{text}<br>" + xLabel + " = %{x}<br>" + yLabel + " = %{y}<extra></extra>",
      };
      const layout = {
        margin: { t: 30, l: 70, r: 20, b: 60 },
        /* half a category of room each side: no point or whisker on the plot's edge */
        xaxis: { title: { text: xLabel }, type: "category",
                 range: [-0.5, new Set(rows.map((r) => r.shown[x])).size - 0.5] },
        yaxis: { title: { text: yLabel }, rangemode: "tozero" },
        title: { text: yLabel + " against " + xLabel },
      };
      return Plotly.react(gd, [trace], plainAxes(layout), plotConfig);
    };
    xSelect.addEventListener("change", draw);
    ySelect.addEventListener("change", draw);
    return draw();
  }

  setUpTables();
  const draws = Object.entries(data.charts || {}).map(([id, figure]) =>
    [id, () => drawChart(id, figure)]);
  if (data.sweep_plot) draws.push(["sweep-metric", drawSweepPicker]);
  drawCharts(draws).then(() => {
    body.dataset.chartsDrawn = String(document.querySelectorAll(".js-plotly-plot").length);
    /* page.html#stage=KEY opens with that stage call pinned (a link to one stage) */
    const hash = decodeURIComponent(window.location.hash.slice(1));
    if (hash.startsWith("stage=")) { pinned = hash.slice(6); shown = undefined; highlight(pinned); }
  }).catch((error) => reportError(String(error)));
})();
