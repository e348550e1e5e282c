// The dashboard's operator panel, spliced into page.ts: a form where a person pastes the operator
// token, and once the host confirmed it (GET /operator), a control per relay (on/off), per axis
// (home, move to a target), per device (stop all motion, clear a latched e-stop). Each click is one
// POST /operator with the token as a bearer header (see operator.ts); the token lives in a
// variable of the page's script, never in storage, a cookie or a URL. The outcome shown under the
// controls is the command as /events reports it from the journal, like any other row.

export const OPERATOR_CSS = `
  #op-open { margin-left: .6rem; font: inherit; font-size: .8rem; }
  #op { border-color: #0969da; }
  #op .opdev { margin: .35rem 0; display: flex; flex-wrap: wrap; gap: .3rem .9rem; align-items: center; }
  #op .ctl { white-space: nowrap; }
  #op button { font: inherit; font-size: .8rem; padding: .05rem .5rem; margin-left: .15rem; }
  #op input[type=number] { width: 5.5rem; font: inherit; font-size: .8rem; }
  #op button.latched { background: var(--bad); color: #fff; border: 1px solid var(--bad); }
  #op-token { width: 16rem; max-width: 100%; }
  #op-status { margin-top: .4rem; font-size: .85rem; overflow-wrap: anywhere; }`;

export const OPERATOR_HTML = `    <div id="op" class="card" data-testid="op" hidden>
      <h2>Operator controls</h2>
      <form id="op-form" data-testid="op-form"><label>operator token <input id="op-token" data-testid="op-token" type="password" autocomplete="off" spellcheck="false"></label> <button type="submit" data-testid="op-unlock">unlock</button> <span id="op-msg" data-testid="op-msg"></span>
        <div class="meta">From <code>.proofrig/operator-token</code> beside the journal; kept in this page's memory only (gone on reload). Each control calls the same MCP tool an agent would, with the operator's authority, and its command shows in the timeline.</div></form>
      <div id="op-controls" data-testid="op-controls"></div>
      <div id="op-status" data-testid="op-status"></div>
      <button id="op-lock" type="button" data-testid="op-lock" hidden>lock the controls</button>
    </div>`;

/** Runs inside the page's script: uses its devices, commands, esc and what. */
export const OPERATOR_SCRIPT = `
  // The operator token: this variable only (not sessionStorage, not a cookie): a reload forgets it.
  var opToken = null, opKey = '', opLast = null, opTargets = {};
  function opEl(id) { return document.getElementById(id); }
  function opMsg(text, cls) { var el = opEl('op-msg'); el.textContent = text; el.className = cls || ''; }
  function opLock(why) {
    opToken = null; opKey = ''; opLast = null;
    opEl('op-form').hidden = false; opEl('op-lock').hidden = true;
    renderOperator(); if (why) opMsg(why, 'failed');
  }
  opEl('op-open').onclick = function () { opEl('op').hidden = false; if (!opToken) opEl('op-token').focus(); };
  opEl('op-lock').onclick = function () { opLock(''); };
  opEl('op-form').onsubmit = function (ev) {
    ev.preventDefault();
    var input = opEl('op-token'), t = input.value.trim();
    input.value = '';
    if (!t) return;
    opMsg('checking…');
    fetch('/operator', { headers: { Authorization: 'Bearer ' + t }, cache: 'no-store' }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (b) {
        if (res.ok && b.operator) {
          opToken = t; opKey = ''; opMsg('');
          opEl('op-form').hidden = true; opEl('op-lock').hidden = false;
          renderOperator();
        } else opMsg(res.status === 401 ? 'refused: not a token of this host' : 'refused: ' + (b.error || 'HTTP ' + res.status), 'failed');
      });
    }, function () { opMsg('the host did not answer', 'failed'); });
  };

  function opDevice(id) {
    var d = devices[id], b = d.board || { relays: [], axes: [] }, latched = d.state && d.state.estop, dev = esc(id);
    var relays = b.relays.map(function (r) {
      var at = ' data-dev="' + dev + '" data-ch="' + r.ch + '" data-tool="relay_set" data-testid="op-relay-' + dev + '-' + r.ch;
      return '<span class="ctl">' + esc(r.label || r.name) + ' <button' + at + '-on" data-on="1">on</button><button' + at + '-off" data-on="0">off</button></span>';
    });
    var axes = b.axes.map(function (a) {
      var k = id + '/' + a.axis, at = ' data-dev="' + dev + '" data-axis="' + esc(a.axis) + '"', t = dev + '-' + esc(a.axis);
      return '<span class="ctl">' + esc(a.label || a.axis) + ' <button data-tool="stepper_home"' + at + ' data-testid="op-home-' + t + '">home</button>' +
        ' <input type="number" step="any" min="' + a.travel_mm[0] + '" max="' + a.travel_mm[1] + '" placeholder="mm" data-target="' + esc(k) + '" data-testid="op-target-' + t + '" value="' + esc(opTargets[k] || '') + '">' +
        '<button data-tool="stepper_move"' + at + ' data-testid="op-move-' + t + '">move</button></span>';
    });
    var whole = (b.axes.length ? '<button data-tool="stop_device" data-dev="' + dev + '" data-testid="op-stop-' + dev + '">stop all motion</button>' : '') +
      (b.estop ? '<button data-tool="estop_clear" data-dev="' + dev + '" data-testid="op-estop-' + dev + '"' + (latched ? ' class="latched"' : '') + '>clear e-stop</button>' + (latched ? ' <span class="code">E-STOP LATCHED</span>' : '') : '');
    return '<div class="opdev" data-testid="op-' + dev + '"><b>' + dev + '</b>' + relays.concat(axes).join('') + (whole ? '<span class="ctl">' + whole + '</span>' : '') + '</div>';
  }

  // Re-drawn only when a device, its board or its e-stop changes: a typed target survives.
  function renderOperator() {
    var el = opEl('op-controls');
    if (!opToken) { el.innerHTML = ''; opEl('op-status').innerHTML = ''; return; }
    var ids = Object.keys(devices).sort();
    var key = JSON.stringify(ids.map(function (id) { var d = devices[id]; return [id, d.board, !!(d.state && d.state.estop)]; }));
    if (key !== opKey) {
      opKey = key;
      Array.prototype.forEach.call(el.querySelectorAll('input[data-target]'), function (i) { opTargets[i.getAttribute('data-target')] = i.value; });
      el.innerHTML = ids.length ? ids.map(opDevice).join('') : '<p class="empty">No devices yet.</p>';
    }
    renderOpStatus();
  }

  // The last control's outcome, as the journal reports it over /events (the same row as the timeline's).
  function renderOpStatus() {
    var el = opEl('op-status');
    if (!opToken || !opLast) { el.innerHTML = ''; return; }
    var c = opLast.command_id && commands[opLast.command_id];
    el.innerHTML = c
      ? '<span data-testid="op-result" data-command="' + esc(c.command_id) + '" data-state="' + esc(c.state) + '">' + esc(what(c)) + ' on ' + esc(c.device_id) + ': <span class="' + esc(c.state) + '">' + esc(c.state) + '</span> ' + esc(c.evidence || '') +
        (c.error_code ? ' <span class="code">' + esc(c.error_code) + '</span>' : '') + (c.detail ? ' — ' + esc(c.detail) : '') + ' <span class="meta">(' + esc(c.command_id) + ')</span></span>'
      : '<span data-testid="op-result" class="' + (opLast.error ? 'failed' : 'meta') + '">' + esc(opLast.tool + ': ' + (opLast.command_id ? 'command ' + opLast.command_id + ', waiting for the journal' : opLast.text)) + '</span>';
  }

  opEl('op-controls').onclick = function (ev) {
    var btn = ev.target && ev.target.closest ? ev.target.closest('button[data-tool]') : null;
    if (!btn || !opToken) return;
    var tool = btn.getAttribute('data-tool'), args = { device_id: btn.getAttribute('data-dev') };
    // One request_id per click: the host never runs the same one twice.
    var rid = 'dash-' + Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 8);
    if (tool === 'relay_set') { args.channel = Number(btn.getAttribute('data-ch')); args.on = btn.getAttribute('data-on') === '1'; args.request_id = rid; args.wait_ms = 5000; }
    else if (tool === 'stepper_home') { args.axis = btn.getAttribute('data-axis'); args.request_id = rid; }
    else if (tool === 'stepper_move') {
      var input = btn.parentNode.querySelector('input[data-target]'), v = input ? input.value.trim() : '';
      if (v === '' || isNaN(Number(v))) { opLast = { tool: tool, text: 'type a target position in mm first', error: true }; return renderOpStatus(); }
      args.axis = btn.getAttribute('data-axis'); args.target_mm = Number(v); args.request_id = rid;
    } else if (tool === 'stop_device') args.wait_ms = 3000;
    var mine = opLast = { tool: tool, text: 'sent…', error: false, command_id: null };
    btn.disabled = true;
    renderOpStatus();
    fetch('/operator', { method: 'POST', headers: { Authorization: 'Bearer ' + opToken, 'Content-Type': 'application/json' }, body: JSON.stringify({ tool: tool, arguments: args }), cache: 'no-store' })
      .then(function (res) {
        return res.json().catch(function () { return {}; }).then(function (b) {
          if (!res.ok) { mine.text = 'refused: ' + (b.error || 'HTTP ' + res.status); mine.error = true; if (res.status === 401 || res.status === 403) opLock(mine.text); return; }
          var r = b.result || {}, sc = r.structuredContent;
          if (sc && sc.command_id) mine.command_id = sc.command_id;
          else { mine.text = (r.content && r.content[0] && r.content[0].text) || 'no answer'; mine.error = !!r.isError; }
        });
      }, function () { mine.text = 'the host did not answer'; mine.error = true; })
      .then(function () { btn.disabled = false; renderOpStatus(); });
  };
`;
