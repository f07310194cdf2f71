// The live metrics of scripts/dev.sh: the functions export OpenTelemetry
// metrics to cmd/devserver's own receiver, which /debug/telemetry serves
// summed over instances; this page turns two successive reads into rates
// and charts the last two minutes. docs/operations/observability.md names
// the metrics.
const params = new URLSearchParams(location.search);
const functions = `http://${params.get("functions") ?? "127.0.0.1:8081"}`;
const points = 60;
const series = { rate: [], items: [], lag: [], refusals: [] };
let previous = null;

// p99 of the lag observed between two reads: the first bucket whose
// cumulative count reaches 99% of the new observations.
function p99(now, before) {
  if (!now?.buckets) return null;
  const delta = now.buckets.map((c, i) => c - (before?.buckets?.[i] ?? 0));
  const total = delta.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  let seen = 0;
  for (let i = 0; i < delta.length; i++) {
    seen += delta[i];
    if (seen >= 0.99 * total) return now.bounds[i] ?? now.bounds[now.bounds.length - 1] * 2;
  }
  return null;
}

function draw(id, values, format) {
  const figure = document.getElementById(id);
  const shown = values.filter((v) => v !== null);
  const top = Math.max(1e-9, ...shown);
  figure.querySelector("polyline").setAttribute("points",
    values.map((v, i) => `${(i * 300) / (points - 1)},${100 - ((v ?? 0) / top) * 95}`).join(" "));
  const last = values[values.length - 1];
  figure.querySelector("b").textContent = last === null || last === undefined ? "–" : format(last);
  figure.dataset.last = last ?? "";
}

async function tick() {
  try {
    const snap = await (await fetch(`${functions}/debug/telemetry`)).json();
    const m = snap.metrics, at = Date.parse(snap.at);
    if (previous) {
      const p = previous.metrics, seconds = (at - Date.parse(previous.at)) / 1000;
      const perSecond = (name) => ((m[name]?.value ?? 0) - (p[name]?.value ?? 0)) / seconds;
      const items = m["shardcount.groupcommit.items"], before = p["shardcount.groupcommit.items"];
      const flushed = (items?.count ?? 0) - (before?.count ?? 0);
      const sample = {
        rate: perSecond("shardcount.increments"),
        items: flushed > 0 ? ((items.sum ?? 0) - (before?.sum ?? 0)) / flushed : null,
        lag: p99(m["shardcount.rollup.lag"], p["shardcount.rollup.lag"]),
        refusals: perSecond("shardcount.refusals"),
      };
      for (const [k, v] of Object.entries(sample)) {
        series[k].push(v);
        if (series[k].length > points) series[k].shift();
      }
      draw("rate", series.rate, (v) => v.toFixed(1));
      draw("items", series.items, (v) => v.toFixed(1));
      draw("lag", series.lag, (v) => `≤ ${v}`);
      draw("refusals", series.refusals, (v) => v.toFixed(1));
    }
    previous = snap;
    document.getElementById("status").textContent = Object.keys(m).length
      ? `Updated ${new Date(at).toLocaleTimeString()}.`
      : "No metrics yet: is OTEL_EXPORTER_OTLP_ENDPOINT this server (scripts/dev.sh's default)? Use the app to make some.";
  } catch (err) {
    document.getElementById("status").textContent = `Cannot read ${functions}/debug/telemetry: ${err}`;
  }
}

tick();
setInterval(tick, 2000);
