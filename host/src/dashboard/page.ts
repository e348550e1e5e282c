// The dashboard page: one static HTML document with its script inline (no build step, no
// framework). It holds no data itself; everything comes from /events with the bearer token,
// which it takes from the URL fragment (#token=…, never sent to the server) and keeps in
// sessionStorage. The operator controls (operator-panel.ts) appear only once a person pasted the
// operator token and the host confirmed it; that token stays in the script's memory.
import { OPERATOR_CSS, OPERATOR_HTML, OPERATOR_SCRIPT } from './operator-panel.js';
import { PWM_ROWS_SCRIPT } from './pwm-rows.js';
import { SENSOR_PLOT_CSS, SENSOR_PLOT_SCRIPT } from './sensor-plot.js';

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>proofrig</title>
<style>
  :root { --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; --mute:#57606a; --line:#d0d7de; --bg:#f6f8fa; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; background: #fff; }
  header { display: flex; align-items: baseline; gap: 1rem; padding: .8rem 1.2rem; border-bottom: 1px solid var(--line); background: var(--bg); }
  header h1 { font-size: 1.1rem; margin: 0; }
  header .tag { color: var(--mute); }
  #conn { margin-left: auto; font-weight: 600; }
  #conn.live { color: var(--ok); } #conn.down { color: var(--bad); }
  main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.6fr); gap: 1rem; padding: 1rem 1.2rem; }
  section { min-width: 0; }
  .scroll { overflow-x: auto; }
  td { overflow-wrap: anywhere; }
  td.detail { min-width: 12rem; }
  td.nowrap, .code { white-space: nowrap; overflow-wrap: normal; }
  @media (max-width: 1100px) { main { grid-template-columns: minmax(0, 1fr); } }
  .folded td { color: var(--mute); font-style: italic; }
  .label { font-weight: 600; }
  svg.plot { width: 100%; height: 130px; display: block; margin-top: .3rem; }
  svg.plot .plan { fill: none; stroke: #8c959f; stroke-dasharray: 4 3; stroke-width: 1.5; }
  svg.plot .meas { fill: none; stroke: #0969da; stroke-width: 2; }
  svg.plot .end { fill: var(--bad); }
  svg.plot text { font-size: 10px; fill: var(--mute); }
  .tl { display: inline-flex; gap: 2px; vertical-align: middle; margin-left: .3rem; }
  .tl i { display: inline-block; width: 7px; height: 12px; border-radius: 2px; background: var(--line); }
  .tl i.on { height: 12px; } .tl i.off { height: 6px; align-self: flex-end; }
  .tl i.completed { background: var(--ok); } .tl i.unverified { background: var(--warn); }
  .tl i.failed, .tl i.timeout, .tl i.rejected { background: var(--bad); }
  h2 { font-size: .95rem; margin: 0 0 .5rem; text-transform: uppercase; letter-spacing: .04em; color: var(--mute); }
  .card { border: 1px solid var(--line); border-radius: 6px; padding: .7rem .8rem; margin-bottom: .8rem; }
  .card h3 { margin: 0 0 .3rem; font-size: 1rem; display: flex; gap: .5rem; align-items: baseline; }
  .badge { font-size: .75rem; font-weight: 700; padding: .05rem .45rem; border-radius: 1rem; color: #fff; }
  .badge.on { background: var(--ok); } .badge.off { background: var(--bad); }
  .meta { color: var(--mute); font-size: .8rem; }
  table { border-collapse: collapse; width: 100%; font-size: .82rem; }
  th, td { text-align: left; padding: .22rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
  th { color: var(--mute); font-weight: 600; }
  .completed { color: var(--ok); font-weight: 600; }
  .unverified { color: var(--warn); font-weight: 600; }
  .failed, .timeout, .rejected { color: var(--bad); font-weight: 600; }
  .cancelled { color: var(--mute); font-weight: 600; }
  .code { font-family: ui-monospace, monospace; font-weight: 700; color: var(--bad); }
  .path { color: var(--mute); }
  #faults li { margin-bottom: .3rem; }
  #faults .code { margin-right: .4rem; }
  .empty { color: var(--mute); font-style: italic; }
${OPERATOR_CSS}
${SENSOR_PLOT_CSS}
  #auth { display: none; margin: 1rem 1.2rem; padding: .8rem; border: 1px solid var(--bad); border-radius: 6px; }
</style>
</head>
<body>
<header><h1>proofrig</h1><span class="tag">only what the hardware confirmed</span><span id="conn" class="down" data-testid="conn">connecting…</span><button id="op-open" type="button" data-testid="op-open">operator controls</button></header>
<div id="auth" data-testid="auth">This dashboard needs the access token. Open the dashboard URL that <code>proofrig serve</code> printed (it ends in <code>#token=…</code>).</div>
<main>
  <section>
${OPERATOR_HTML}
    <h2>Devices</h2>
    <div id="devices" data-testid="devices"><p class="empty">No devices yet.</p></div>
    <h2>Faults</h2>
    <ul id="faults" data-testid="faults"><li class="empty">None in the journal.</li></ul>
  </section>
  <section>
    <h2>Commands</h2>
    <div class="scroll"><table><thead><tr><th>time</th><th>command</th><th>device</th><th>action</th><th>lifecycle</th><th>evidence</th><th>error</th><th>detail</th></tr></thead>
    <tbody id="commands" data-testid="commands"></tbody></table></div>
  </section>
</main>
<script>
(function () {
  var TERMINAL = { completed: 1, unverified: 1, failed: 1, rejected: 1, timeout: 1, cancelled: 1 };
  var devices = {}, commands = {}, order = [], paths = {}, faults = [], seenAt = Date.now(), serverSkew = 0;
  // A move's plan (commanded mm over ms, from the server) and the encoder positions seen during it.
  var plans = {}, measured = {};
  var m = /token=([^&]+)/.exec(location.hash);
  if (m) { sessionStorage.setItem('proofrig-token', decodeURIComponent(m[1])); history.replaceState(null, '', location.pathname); }
  var token = sessionStorage.getItem('proofrig-token');

  function esc(s) { return String(s == null ? '' : s).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; }); }
  function age(ms) { if (ms == null) return 'never'; var s = Math.round(ms / 1000); return s < 60 ? s + ' s ago' : Math.round(s / 60) + ' min ago'; }
  // What a person calls an axis: its label from the board.
  function labelOf(dev, axis) {
    var b = devices[dev] && devices[dev].board, list = b ? b.axes : [];
    for (var i = 0; i < list.length; i++) if (list[i].axis === axis) return list[i].label ? ' (' + list[i].label + ')' : '';
    return '';
  }
  // The server says what each command does, in words, from its kind (the page names no action).
  function what(c) { return c.what || c.action; }
  function lastEvidence(dev, ch) {
    for (var i = 0; i < order.length; i++) {
      var c = commands[order[i]];
      if (c.device_id === dev && c.target === 'relay' && c.args && c.args.ch === ch && TERMINAL[c.state])
        return '<span class="' + c.state + '">' + c.state + '</span> ' + esc(c.evidence || '') + (c.error_code ? ' <span class="code">' + esc(c.error_code) + '</span>' : '');
    }
    return '<span class="meta">—</span>';
  }
  // The channel's last switches, oldest first: tall = on, short = off; the colour is the outcome
  // (green confirmed, amber unverified, red failed, refused or unknown); the title has time and evidence.
  function timeline(dev, ch) {
    var out = [];
    for (var i = 0; i < order.length && out.length < 12; i++) {
      var c = commands[order[i]];
      if (c.device_id === dev && c.target === 'relay' && c.args && c.args.ch === ch && TERMINAL[c.state])
        out.push('<i class="' + (c.args.on ? 'on ' : 'off ') + esc(c.state) + '" title="' + esc((c.terminal_at || '').slice(11, 19) + ' ' + (c.args.on ? 'on' : 'off') + ': ' + c.state + (c.evidence ? ' ' + c.evidence : '') + (c.error_code ? ' ' + c.error_code : '')) + '"></i>');
    }
    return out.length ? '<span class="tl" data-testid="timeline-' + esc(dev) + '-' + ch + '" data-n="' + out.length + '">' + out.reverse().join('') + '</span>' : '';
  }
  // Progress frames carry the measured position of a running move: show it on the axis live.
  function runningMove(dev, axis) {
    for (var i = 0; i < order.length; i++) {
      var c = commands[order[i]];
      if (c.device_id === dev && c.motion && c.args && c.args.axis === axis) return TERMINAL[c.state] ? null : c;
    }
    return null;
  }
  // Commanded (dashed) against measured (blue) position of the latest move on an axis; where it failed, the code.
  function plot(dev, axis) {
    var c = null;
    for (var i = 0; i < order.length; i++) { var x = commands[order[i]]; if (x.device_id === dev && plans[x.command_id] && x.args && x.args.axis === axis) { c = x; break; } }
    if (!c) return '';
    var plan = plans[c.command_id], meas = measured[c.command_id] || [];
    var all = plan.concat(meas), tMax = 1, lo = Infinity, hi = -Infinity;
    all.forEach(function (p) { tMax = Math.max(tMax, p[0]); lo = Math.min(lo, p[1]); hi = Math.max(hi, p[1]); });
    if (hi - lo < 1) { hi += 0.5; lo -= 0.5; }
    var W = 600, H = 130, L = 34, B = 16;
    function X(t) { return (L + (t / tMax) * (W - L - 6)).toFixed(1); }
    function Y(v) { return (6 + (1 - (v - lo) / (hi - lo)) * (H - B - 6)).toFixed(1); }
    function line(ps) { return ps.map(function (p) { return X(p[0]) + ',' + Y(p[1]); }).join(' '); }
    var last = meas[meas.length - 1];
    var end = TERMINAL[c.state] && c.state !== 'completed' && last ? '<circle class="end" data-testid="plot-end" cx="' + X(last[0]) + '" cy="' + Y(last[1]) + '" r="4"/><text x="' + X(last[0]) + '" y="' + (Number(Y(last[1])) - 7) + '" text-anchor="end" fill="#cf222e">' + esc(c.error_code || c.state) + ' at ' + last[1] + ' mm</text>' : '';
    return '<svg class="plot" data-testid="plot-' + esc(dev) + '-' + esc(axis) + '" viewBox="0 0 ' + W + ' ' + H + '" preserveAspectRatio="none">' +
      '<text x="2" y="12">' + hi.toFixed(0) + ' mm</text><text x="2" y="' + (H - B) + '">' + lo.toFixed(0) + ' mm</text><text x="' + (W - 4) + '" y="' + (H - 3) + '" text-anchor="end">' + (tMax / 1000).toFixed(1) + ' s · ' + esc(c.what || '') + ' · dashed commanded, blue encoder</text>' +
      '<polyline class="plan" points="' + line(plan) + '"/>' + (meas.length ? '<polyline class="meas" data-testid="plot-measured" data-points="' + meas.length + '" points="' + line(meas) + '"/>' : '') + end + '</svg>';
  }
${SENSOR_PLOT_SCRIPT}
${PWM_ROWS_SCRIPT}
  function yesno(v) { return v === null || v === undefined ? '<span class="meta">n/a</span>' : v ? 'on' : 'off'; }

  function renderDevices() {
    var ids = Object.keys(devices).sort();
    var el = document.getElementById('devices');
    if (!ids.length) { el.innerHTML = '<p class="empty">No devices yet.</p>'; return; }
    el.innerHTML = ids.map(function (id) {
      var d = devices[id], s = d.state, b = d.board || { relays: [], axes: [], sensors: [] };
      var seen = d.last_seen ? age(Date.now() - serverSkew - Date.parse(d.last_seen)) : 'never';
      var relays = b.relays.map(function (r) {
        var st = s ? (s.relays.filter(function (x) { return x.ch === r.ch; })[0] || {}) : {};
        return '<tr data-testid="relay-' + esc(id) + '-' + r.ch + '"><td>' + r.ch + '</td><td>' + (r.label ? '<span class="label">' + esc(r.label) + '</span>' + (r.label.toLowerCase() === r.name.toLowerCase() ? '' : ' ' + esc(r.name)) : esc(r.name)) + '</td><td>' + esc(r.feedback) + '</td><td>' + (st.cmd === null ? '<span class="meta">never</span>' : yesno(st.cmd)) + '</td><td>' + yesno(st.pin) + '</td><td>' + yesno(st.aux) + '</td><td>' + lastEvidence(id, r.ch) + timeline(id, r.ch) + '</td></tr>';
      }).join('');
      var axes = (s && s.axes ? s.axes : []).map(function (a) {
        var run = runningMove(id, a.axis);
        if (run) a = { axis: a.axis, pos: run.position_mm != null ? run.position_mm : a.pos, homed: a.homed, moving: true, fault: a.fault, home: a.home, limit: a.limit };
        return '<tr data-testid="axis-' + esc(id) + '-' + esc(a.axis) + '"><td>' + esc(a.axis) + esc(labelOf(id, a.axis)) + '</td><td>' + a.pos + ' mm</td><td>' + (a.homed ? 'homed' : '<b>not homed</b>') + '</td><td>' + (a.moving ? 'moving' : 'still') + '</td><td>' + (a.fault ? '<span class="code">FAULT</span>' : 'ok') + '</td><td>' + (a.home ? 'home ' : '') + (a.limit ? 'limit' : '') + '</td></tr>';
      }).join('');
      return '<div class="card" data-testid="device-' + esc(id) + '"><h3>' + esc(id) + ' <span class="badge ' + (d.online ? 'on">online' : 'off">offline') + '</span></h3>' +
        '<div class="meta">' + (b.area ? '<b data-testid="area-' + esc(id) + '">' + esc(b.area) + '</b> · ' : '') + esc(d.board_name) + ' · last seen <span data-testid="seen-' + esc(id) + '">' + seen + '</span> · boot ' + esc(d.boot_id || '—') + ' · state ' + (d.state_observed_at ? 'observed ' + age(Date.now() - serverSkew - Date.parse(d.state_observed_at)) : 'never read') + '</div>' +
        (relays ? '<div class="scroll"><table><thead><tr><th>ch</th><th>name</th><th>feedback</th><th>commanded</th><th>pin</th><th>aux</th><th>last evidence</th></tr></thead><tbody>' + relays + '</tbody></table></div>' : '') +
        (axes ? '<div class="scroll"><table><thead><tr><th>axis</th><th>position</th><th>homed</th><th>motion</th><th>driver</th><th>switches</th></tr></thead><tbody>' + axes + '</tbody></table></div>' + (s && s.axes ? s.axes.map(function (a) { return plot(id, a.axis); }).join('') : '') : '') +
        pwmOf(id, b, s) + sensorsOf(id, b) + '</div>';
    }).join('');
  }

  // Calls for devices this host does not know are refused before anything is sent: one folded row, not a flood.
  function unknownDevice(c) { return c.state === 'rejected' && c.error_code === 'DEVICE_OFFLINE' && !devices[c.device_id]; }
  function renderCommands() {
    var shown = order.slice(0, 100), folded = shown.filter(function (id) { return unknownDevice(commands[id]); });
    document.getElementById('commands').innerHTML = (folded.length ? '<tr class="folded" data-testid="folded"><td colspan="8">' + folded.length + ' call' + (folded.length === 1 ? '' : 's') +
      ' for devices this host does not know (' + esc(folded.map(function (id) { return commands[id].device_id; }).filter(function (d, i, all) { return all.indexOf(d) === i; }).slice(0, 5).join(', ')) + '), refused before anything was sent</td></tr>' : '') +
      shown.filter(function (id) { return !unknownDevice(commands[id]); }).map(function (id) {
      var c = commands[id];
      return '<tr data-testid="cmd-' + esc(id) + '" data-state="' + esc(c.state) + '"><td class="nowrap">' + esc((c.submitted_at || '').slice(11, 23)) + '</td><td>' + esc(id) + '</td><td>' + esc(c.device_id) + '</td><td>' + esc(what(c)) + '</td>' +
        '<td><span class="path">' + esc((paths[id] || []).slice(0, -1).concat('').join(' → ')) + '</span><span class="' + esc(c.state) + '">' + esc(c.state) + '</span></td><td>' + esc(c.evidence || '') + '</td><td>' + (c.error_code ? '<span class="code">' + esc(c.error_code) + '</span>' : '') + '</td><td class="detail">' + esc(c.detail || '') + '</td></tr>';
    }).join('');
  }

  function renderFaults() {
    var el = document.getElementById('faults');
    el.innerHTML = faults.length ? faults.slice(0, 20).map(function (f) {
      return '<li data-testid="fault"><span class="code">' + esc(f.code) + '</span>' + esc(f.at.slice(11, 19)) + ' ' + esc(f.device) + ': ' + esc(f.text) + '</li>';
    }).join('') : '<li class="empty">None in the journal.</li>';
  }

  function command(c, live) {
    if (!commands[c.command_id]) order.unshift(c.command_id);
    var p = paths[c.command_id] || (paths[c.command_id] = []);
    (c.path || [c.state]).forEach(function (st) { if (p.indexOf(st) < 0) p.push(st); });
    var was = commands[c.command_id];
    commands[c.command_id] = c;
    if (c.plan && !plans[c.command_id]) plans[c.command_id] = c.plan;
    if (plans[c.command_id] && c.position_mm != null && c.submitted_at) {
      var m = measured[c.command_id] || (measured[c.command_id] = []);
      var t = TERMINAL[c.state] && c.terminal_at ? Date.parse(c.terminal_at) - Date.parse(c.submitted_at) : Date.now() - serverSkew - Date.parse(c.submitted_at);
      if (!m.length || m[m.length - 1][1] !== c.position_mm || TERMINAL[c.state]) m.push([Math.max(0, t), c.position_mm]);
    }
    if (live && c.error_code && c.state !== 'rejected' && (!was || was.state !== c.state))
      faults.unshift({ code: c.error_code, at: c.terminal_at || new Date().toISOString(), device: c.device_id, text: what(c) + (c.detail ? ' — ' + c.detail : '') });
  }

  function handle(event, data) {
    if (event === 'snapshot') {
      serverSkew = Date.now() - Date.parse(data.at);
      devices = {}; data.devices.forEach(function (d) { if (d) devices[d.device_id] = d; });
      readings = {}; plotN = data.plot_readings || plotN;
      Object.keys(data.readings || {}).forEach(function (dev) { Object.keys(data.readings[dev]).forEach(function (id) { data.readings[dev][id].forEach(function (p) { addReading(dev, p); }); }); });
      data.devices.forEach(function (d) { if (d) (d.readings || []).forEach(function (p) { addReading(d.device_id, p); }); });
      commands = {}; order = []; paths = {};
      data.commands.slice().reverse().forEach(function (c) { command(c, false); });
      faults = (data.faults || []).map(function (c) { return { code: c.error_code || c.state, at: c.terminal_at || c.submitted_at, device: c.device_id, text: what(c) + (c.detail ? ' — ' + c.detail : '') }; });
    } else if (event === 'command') {
      command(data, true);
    } else if (event === 'device' && data) {
      var was = devices[data.device_id];
      devices[data.device_id] = data;
      (data.readings || []).forEach(function (p) { addReading(data.device_id, p); });
      (data.state && data.state.axes || []).forEach(function (a) {
        var before = was && was.state && was.state.axes ? was.state.axes.filter(function (x) { return x.axis === a.axis; })[0] : null;
        if (a.fault && !(before && before.fault)) faults.unshift({ code: 'DRIVER FAULT', at: new Date().toISOString(), device: data.device_id, text: 'axis ' + a.axis + ' at ' + a.pos + ' mm' });
      });
    }
    renderDevices(); renderCommands(); renderFaults(); renderOperator();
  }
${OPERATOR_SCRIPT}

  function setConn(ok, text) { var el = document.getElementById('conn'); el.className = ok ? 'live' : 'down'; el.textContent = text; }

  function connect(wait) {
    var headers = token ? { Authorization: 'Bearer ' + token } : {};
    fetch('/events', { headers: headers, cache: 'no-store' }).then(function (res) {
      if (res.status === 401 || res.status === 403) { document.getElementById('auth').style.display = 'block'; setConn(false, 'not authorised'); return; }
      if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
      setConn(true, 'live');
      wait = 500;
      var reader = res.body.getReader(), dec = new TextDecoder(), buf = '';
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) throw new Error('stream ended');
          buf += dec.decode(r.value, { stream: true });
          var i;
          while ((i = buf.indexOf('\\n\\n')) >= 0) {
            var block = buf.slice(0, i); buf = buf.slice(i + 2);
            var ev = 'message', data = '';
            block.split('\\n').forEach(function (l) { if (l.indexOf('event: ') === 0) ev = l.slice(7); else if (l.indexOf('data: ') === 0) data += l.slice(6); });
            if (data) handle(ev, JSON.parse(data));
          }
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      setConn(false, 'reconnecting…');
      setTimeout(function () { connect(Math.min(wait * 2, 10000)); }, wait);
    });
  }

  setInterval(renderDevices, 1000);
  connect(500);
})();
</script>
</body>
</html>
`;
