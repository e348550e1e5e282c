// The dashboard's sensor plots (inlined into page.ts, no chart library): each sensor's last
// readings over time as an SVG, like the axes' move plots. The page's first snapshot brings the
// readings the journal holds (sensor-history.ts); every device event brings the readings in its
// state snapshot. A reading is known by its key (boot id and device uptime), so the same reading
// in several snapshots is drawn once. Values are drawn only with status ok; a reading with an
// error status (BUS_NAK, SENSOR_CRC, OUT_OF_RANGE) breaks the line and is a red mark with its code.

export const SENSOR_PLOT_CSS = `
  svg.splot { width: 100%; height: 90px; display: block; margin: .1rem 0 .5rem; }
  svg.splot .val { fill: none; stroke: #0969da; stroke-width: 2; }
  svg.splot circle.ok { fill: #0969da; }
  svg.splot .err line { stroke: var(--bad); stroke-width: 1.5; }
  svg.splot .err text { fill: var(--bad); font-weight: 700; }
  svg.splot text { font-size: 10px; fill: var(--mute); }
  .sensor-head { font-size: .82rem; margin-top: .4rem; }`;

export const SENSOR_PLOT_SCRIPT = `
  // Each sensor's readings, oldest first, by "device/sensor"; plotN is how many the page keeps.
  var readings = {}, plotN = 60;
  function addReading(dev, p) {
    var k = dev + '/' + p.id, list = readings[k] || (readings[k] = []);
    for (var i = 0; i < list.length; i++) if (list[i].key === p.key) return;
    list.push(p);
    list.sort(function (a, b) { return a.t - b.t; });
    if (list.length > plotN) list.splice(0, list.length - plotN);
  }
  function fmt(v) { return String(Math.round(v * 100) / 100); }
  // One sensor: a line through its ok values, broken by each error reading (a red mark with its code).
  function sensorPlot(dev, s) {
    var list = readings[dev + '/' + s.id] || [], last = list[list.length - 1];
    var head = '<div class="sensor-head" data-testid="sensor-' + esc(dev) + '-' + esc(s.id) + '"><span class="label">' + esc(s.label || s.id) + '</span> ' + (s.label ? '<span class="meta">' + esc(s.id) + '</span> ' : '') +
      (!last ? '<span class="meta">not read yet</span>' : last.st === 'ok' ? '<b data-testid="sensor-last">' + fmt(last.v) + ' ' + esc(s.unit) + '</b>' : '<span class="code" data-testid="sensor-last">' + esc(last.st) + '</span>') +
      (last ? ' <span class="meta">measured ' + age(Date.now() - serverSkew - last.t) + '</span>' : '') + '</div>';
    if (!list.length) return head;
    var oks = list.filter(function (p) { return p.st === 'ok'; }), lo = Infinity, hi = -Infinity;
    oks.forEach(function (p) { lo = Math.min(lo, p.v); hi = Math.max(hi, p.v); });
    if (!oks.length) { lo = s.range[0]; hi = s.range[1]; }
    if (hi - lo < 0.2) { hi += 0.1; lo -= 0.1; }
    var t0 = list[0].t, span = Math.max(1000, last.t - t0), W = 600, H = 90, L = 48, B = 14;
    function X(t) { return (L + ((t - t0) / span) * (W - L - 8)).toFixed(1); }
    function Y(v) { return (8 + (1 - (v - lo) / (hi - lo)) * (H - B - 12)).toFixed(1); }
    var runs = [], run = [], marks = '', dots = '', labelX = -Infinity;
    list.forEach(function (p) {
      if (p.st === 'ok') { run.push(X(p.t) + ',' + Y(p.v)); dots += '<circle class="ok" cx="' + X(p.t) + '" cy="' + Y(p.v) + '" r="2.5"><title>' + esc(fmt(p.v) + ' ' + s.unit) + '</title></circle>'; return; }
      if (run.length) runs.push(run); run = [];
      // Every error reading is a mark; its code is written when there is room (hover shows it always).
      var x = Number(X(p.t)), room = x - labelX > 90;
      if (room) labelX = x;
      marks += '<g class="err" data-testid="splot-err" data-code="' + esc(p.st) + '"><title>' + esc(p.st) + '</title><line x1="' + x + '" x2="' + x + '" y1="4" y2="' + (H - B) + '"/>' +
        (room ? '<text x="' + (x > W - 90 ? x - 3 : x + 3) + '" y="16" text-anchor="' + (x > W - 90 ? 'end' : 'start') + '">' + esc(p.st) + '</text>' : '') + '</g>';
    });
    if (run.length) runs.push(run);
    return head + '<svg class="splot" data-testid="splot-' + esc(dev) + '-' + esc(s.id) + '" data-values="' + oks.map(function (p) { return p.v; }).join(' ') + '" data-statuses="' + esc(list.map(function (p) { return p.st; }).join(' ')) + '" viewBox="0 0 ' + W + ' ' + H + '" preserveAspectRatio="none">' +
      '<text x="2" y="12">' + fmt(hi) + ' ' + esc(s.unit) + '</text><text x="2" y="' + (H - B) + '">' + fmt(lo) + ' ' + esc(s.unit) + '</text><text x="' + (W - 4) + '" y="' + (H - 2) + '" text-anchor="end">' + list.length + ' reading' + (list.length === 1 ? '' : 's') + ' over ' + (span / 1000).toFixed(1) + ' s</text>' +
      runs.map(function (r) { return '<polyline class="val" points="' + r.join(' ') + '"/>'; }).join('') + dots + marks + '</svg>';
  }
  function sensorsOf(dev, b) { return (b.sensors || []).map(function (s) { return sensorPlot(dev, s); }).join(''); }`;
