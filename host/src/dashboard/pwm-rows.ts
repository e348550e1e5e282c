// The dashboard's PWM outputs (inlined into page.ts): one table row per fan and servo on the device
// card, like the relays' rows, from the state snapshot the device sends (s.fans: commanded duty and
// the speed its tachometer last measured; s.servos: the angle last commanded) and the last fan or
// servo command that ended (events.ts names the output each command drives: `pwm`). A servo has
// nothing that reports where it is: its row says "unverified" whatever was commanded, and its last
// verdict can be no better.

export const PWM_ROWS_SCRIPT = `
  // The last ended command on PWM output id of dev: its state, evidence and error code, as the relay rows show it.
  function pwmVerdict(dev, id) {
    for (var i = 0; i < order.length; i++) {
      var c = commands[order[i]];
      if (c.device_id === dev && c.pwm === id && TERMINAL[c.state])
        return '<span class="' + esc(c.state) + '">' + esc(c.state) + '</span> ' + esc(c.evidence || '') + (c.error_code ? ' <span class="code">' + esc(c.error_code) + '</span>' : '') +
          ' <span class="meta">' + esc(c.args.duty != null ? c.args.duty + ' %' : c.args.deg + '°') + '</span>';
    }
    return '<span class="meta">—</span>';
  }
  function pwmName(p) { return p.label ? '<span class="label">' + esc(p.label) + '</span> ' + esc(p.id) : esc(p.id); }
  // Fans and servos of the board, as the device last reported them.
  function pwmOf(dev, b, s) {
    var rows = (b.pwm || []).map(function (p) {
      if (p.kind === 'fan') {
        var f = (s && s.fans ? s.fans.filter(function (x) { return x.id === p.id; })[0] : null) || {};
        var rpm = !p.tach ? '<span class="meta">no tachometer</span>' : f.rpm == null ? '<span class="meta">not measured</span>' : esc(f.rpm) + ' rpm';
        return '<tr data-testid="fan-' + esc(dev) + '-' + esc(p.id) + '"><td>' + pwmName(p) + '</td><td class="nowrap">fan</td><td data-testid="fan-duty" class="nowrap">' + (f.duty == null ? '<span class="meta">n/a</span>' : esc(f.duty) + ' %') + '</td>' +
          '<td data-testid="fan-rpm" class="nowrap">' + rpm + '</td><td data-testid="pwm-verdict">' + pwmVerdict(dev, p.id) + '</td></tr>';
      }
      var v = (s && s.servos ? s.servos.filter(function (x) { return x.id === p.id; })[0] : null) || {};
      return '<tr data-testid="servo-' + esc(dev) + '-' + esc(p.id) + '"><td>' + pwmName(p) + '</td><td class="nowrap">servo</td><td data-testid="servo-deg" class="nowrap">' + (v.deg == null ? '<span class="meta">never</span>' : esc(v.deg) + '°') + '</td>' +
        '<td data-testid="servo-measured"><span class="unverified">unverified</span> <span class="meta">no angle sensor</span></td><td data-testid="pwm-verdict">' + pwmVerdict(dev, p.id) + '</td></tr>';
    }).join('');
    return rows ? '<div class="scroll"><table><thead><tr><th>output</th><th>kind</th><th>commanded</th><th>measured</th><th>last verdict</th></tr></thead><tbody>' + rows + '</tbody></table></div>' : '';
  }`;
