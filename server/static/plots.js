// Shepherd console: the plots of the task page (lag and rows/s) and of
// the job page (run durations), drawn with the vendored uPlot
// (/static/vendor/uplot) from GET /api/v1/tasks/{task}/series and
// /api/v1/jobs/{job}/durations, for the last 1 h, 6 h or 24 h. Times are
// UTC, as everywhere in the console. Uses api, secs and flash of
// console.js, loaded before it.
"use strict";

// Tick steps of a duration axis, in seconds: ticks land on 30s, 5m, 1h…
const durationIncrs = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30,
  60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

// The colour of a run's outcome, as the run grid has it (console.css).
const outcomeColours = {succeeded: "#1f7a3a", failed: "#b3261e", timeout: "#d9480f", abandoned: "#7a1a14",
  replaced: "#7e8ea0", skipped: "#e7a6c8", missed: "#8d6e63"};

// durationText renders seconds for an axis tick or a legend: 0s, 850ms,
// 12.5s, 2m, 1m30s, 3h, 2h5m.
function durationText(x) {
  if (x === null || x === undefined) return "unknown";
  if (x === 0) return "0s";
  if (x < 60) return secs(x);
  const [big, unit, small, smallUnit] = x < 3600 ? [60, "m", 1, "s"] : [3600, "h", 60, "m"];
  let n = Math.floor(x / big), rest = Math.round((x - n * big) / small);
  if (rest * small >= big) [n, rest] = [n + 1, 0];
  return n + unit + (rest ? rest + smallUnit : "");
}

// isoTemplate makes uPlot's date templates read as the console's times
// do: 24-hour clock, dates year first.
function isoTemplate(tpl) {
  return tpl.replace("{M}/{D}/{YY}", "{YYYY}-{MM}-{DD}").replace("{M}/{D}", "{MM}-{DD}")
    .replace("{h}{aa}", "{HH}:00").replace(/\{h\}/g, "{HH}").replace(/\{aa\}/g, "");
}

// rateText renders rows per second: one decimal below 10, else whole.
function rateText(x) {
  if (x === null || x === undefined) return "unknown";
  return x < 10 ? String(Math.round(x * 10) / 10) : Math.round(x).toLocaleString("en");
}

// base is what every plot shares: the width of its box, UTC times on a
// fixed x range [from, to], and a y axis from 0.
function base(el, from, to, yLabel, yValues, yIncrs) {
  const y = {label: yLabel, labelSize: 20, size: 64, values: (u, splits) => splits.map(yValues)};
  if (yIncrs) y.incrs = yIncrs;
  return {
    width: Math.max(el.clientWidth, 200),
    height: 200,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
    fmtDate: (tpl) => uPlot.fmtDate(isoTemplate(tpl)),
    scales: {
      x: {time: true, range: () => [from, to]},
      y: {range: (u, min, max) => [0, max === null || max <= 0 ? 1 : max * 1.1]},
    },
    axes: [
      {label: "time (UTC)", labelSize: 20},
      y,
    ],
    cursor: {drag: {x: false, y: false}},
    legend: {live: true},
  };
}

// drawTask draws a task's series: lag and rows/s, a gap where null.
function drawTask(box, data) {
  const xs = data.points.map((p) => p.t);
  const from = Date.parse(data.from) / 1e3, to = Date.parse(data.to) / 1e3;
  const lagEl = box.querySelector("#plot-lag"), rowsEl = box.querySelector("#plot-rows");
  const lag = base(lagEl, from, to, "lag", durationText, durationIncrs);
  lag.series = [{label: "time"}, {label: "lag", stroke: "#2b5d8c", width: 1.5, fill: "rgba(43,93,140,0.08)",
    value: (u, v) => durationText(v), points: {show: xs.length < 100}}];
  const rows = base(rowsEl, from, to, "rows/s", rateText);
  rows.series = [{label: "time"}, {label: "rows/s", stroke: "#1f7a3a", width: 1.5,
    value: (u, v) => v === null || v === undefined ? "unknown" : rateText(v) + " rows/s", points: {show: xs.length < 100}}];
  return [
    new uPlot(lag, [xs, data.points.map((p) => p.lag)], lagEl),
    new uPlot(rows, [xs, data.points.map((p) => p.rowsPerSecond)], rowsEl),
  ];
}

// drawJob draws a job's runs: one point per run at its start, its
// duration high, coloured by outcome (one series per outcome present).
function drawJob(box, data) {
  const from = Date.parse(data.from) / 1e3, to = Date.parse(data.to) / 1e3;
  const el = box.querySelector("#plot-durations");
  const xs = [...new Set(data.runs.map((r) => r.t))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const outcomes = [...new Set(data.runs.map((r) => r.status))];
  const ys = outcomes.map(() => xs.map(() => null));
  for (const r of data.runs) {
    const y = ys[outcomes.indexOf(r.status)], i = at.get(r.t);
    y[i] = Math.max(y[i] === null ? 0 : y[i], r.duration);
  }
  const opts = base(el, from, to, "duration", durationText, durationIncrs);
  opts.series = [{label: "started"}].concat(outcomes.map((o) => ({
    label: o, stroke: outcomeColours[o] || "#5f6b78", paths: () => null,
    points: {show: true, size: 9, fill: outcomeColours[o] || "#5f6b78"},
    value: (u, v) => v === null || v === undefined ? "–" : durationText(v), // no run of that outcome there
  })));
  return [new uPlot(opts, [xs].concat(ys), el)];
}

// wirePlots makes the page's plots: drawn for the range chosen (1 hour
// first), drawn again when another is chosen, when the window is
// resized, and at most once a minute as snapshots arrive.
function wirePlots() {
  const box = document.querySelector("[data-plots]");
  if (!box) return;
  const status = box.querySelector("[data-plot-status]");
  const say = (text, bad) => {
    status.textContent = text;
    status.className = bad ? "plot-status err" : "plot-status hint";
  };
  if (!window.uPlot) {
    say("The plotting library did not load.", true);
    return;
  }
  const kind = box.dataset.plots, name = encodeURIComponent(box.dataset.name);
  let range = "1h", charts = [], loaded = 0, asked = 0;
  const load = async () => {
    const n = ++asked;
    const url = kind === "task" ? "/api/v1/tasks/" + name + "/series?range=" + range : "/api/v1/jobs/" + name + "/durations?range=" + range;
    try {
      const {data} = await api("GET", url);
      if (n !== asked) return; // a newer range was chosen meanwhile
      for (const c of charts) c.destroy();
      charts = kind === "task" ? drawTask(box, data) : drawJob(box, data);
      loaded = Date.now();
      box.dataset.range = range;
      if (kind === "task") {
        const known = data.points.filter((p) => p.lag !== null || p.rowsPerSecond !== null).length;
        say(known ? known + " of " + data.points.length + " buckets of " + (data.step / 60) + " min have a value" +
          (data.written ? "; stored by the monitor " + utc(data.written) : "") + "." :
          "Nothing recorded in this range: no monitor has seen the task with a lag or an owner applying.");
      } else {
        say(data.runs.length ? data.runs.length + " finished run(s) started in this range." : "No finished run started in this range.");
      }
    } catch (e) {
      if (n === asked) say("Could not read the plot's data: " + e.message, true);
    }
  };
  for (const b of box.querySelectorAll("button[data-range]")) {
    b.addEventListener("click", () => {
      range = b.dataset.range;
      for (const o of box.querySelectorAll("button[data-range]")) o.setAttribute("aria-pressed", String(o === b));
      load();
    });
  }
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const c of charts) c.setSize({width: Math.max(c.root.parentElement.clientWidth, 200), height: 200});
    }, 100);
  });
  document.addEventListener("shepherd:snapshot", () => {
    if (Date.now() - loaded > 60000) load();
  });
  load();
}

document.addEventListener("DOMContentLoaded", wirePlots);
