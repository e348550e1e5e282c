// The Storage `.boot0` that binds a real Espruino interpreter's pin functions to the rig model in
// Node (the Espruino engine). It runs before the firmware at every boot. Channel:
// - interpreter → Node: lines "\x01<msg>\n" on the process's stdout (Espruino writes its console
//   straight to stdout with fflush per byte: no Nagle, no batching);
// - Node → interpreter: watch edges in batches on a loopback TCP socket (Node sets TCP_NODELAY; the
//   interpreter reads at most 536 bytes per socket per turn of its idle loop);
// - digitalRead/getPinMode are synchronous on the chip, so they are a round trip (one for a
//   digitalRead of an array of pins, as it is one native call on the chip): the read request
//   goes out on stdout (after every earlier write, in order) and the shim blocks reading the named
//   pipe `pins.fifo` in its working folder until Node answers there (a busy-wait on a plain file
//   was an order of magnitude slower, because it competes with Node for the CPU). The level read is the model's level after every earlier write, never a stale mirror.
// - JsVar store: the ESP32 allocates its store once at boot (up to 16,383 JsVars); the 64-bit Linux
//   build starts with 4,096 and grows only when no single JsVar is free, never for a flat string
//   (an ArrayBuffer such as every crypto.SHA256 result), so at ~3,000 in use it fails those
//   ("Not enough memory for result") where the chip would not. The shim grows it to 16,384 first.
//
// Watch edges. An ESP32 stamps each edge in its GPIO interrupt and queues it; the idle loop hands
// every queued edge to its watch, in order, before it runs the timers that are due. Here:
// - every edge has a sequence number; Node pushes them in batches (at most one per 4 ms), one line
//   per batch: the JSON array [seq of the first edge, count, base ms, entries...], an entry being
//   -id (the edges that follow are for watch id) or dt·8 + data + state (dt: µs after base; data:
//   0 none, 2 low, 4 high). About 6 bytes per edge instead of a ~25-byte line per edge: the
//   interpreter reads 536 bytes per socket per turn of its idle loop, parsed one 22-edge read per
//   turn and fell ever further behind a 750 edges/s encoder (a stall at 70 mm seen at 45.6 mm);
// - before any timer callback of the firmware runs, the shim pulls (a fifo round trip like a read)
//   every edge up to the interpreter's getTime(), after Node has integrated the rig's motion up to
//   that instant. So a timer never runs with edges from before its time still in flight, whatever
//   the load (the firmware's 20 ms step tick, its settle verdict and its stop snapshot read the
//   encoder count right after a timer fires); a timer that a dispatched watch callback cleared
//   does not run (as on the chip, where events are handled before the timers);
// - the shim counts delivered edges (NX): an edge both pushed and pulled is dispatched once.
// Each event is {state, time, lastTime[, data]} as Espruino's setWatch gives it (time: when the
// edge happened, in seconds of getTime()); lastTime moves on every edge of the pin, also on edges an
// 'edge' option filters out; a callback that throws is reported and the next edge still runs.
// Not reproduced: `pin` in the event and `debounce` (the firmware uses neither); an edge reaches its
// callback at the next pull or push (a firmware timer, or within ~4 ms plus a turn of the idle loop),
// not microseconds after it happened; edges and the host's socket data are two queues, not one.
// The interpreter still needs the CPU a chip would have: a firmware timer that runs late (the
// process starved on a loaded machine) lets the hardware step train run on, as it would on a chip
// whose main loop stalled (seen on a heavily loaded machine; docs/performance.md).
// At every boot the shim also sends the board of the config in Storage, so the rig model wires the
// board the firmware will read (also one written by `proofrig upload --tcp` through the console).
// Outputs (W, A, P) and reads (R, a, I) carry the interpreter's ms since the shim started: Node answers
// a read no earlier than the same interval after the last output reached it, so a read the firmware
// made 25 ms after a write sees the rig 25 ms after that write even when Node took both lines at once.
// I2C1 and analogRead are round trips like digitalRead: the rig's sensors (sensor-models.ts) answer
// "IW addr bytes" / "IR addr n" (a NAK answers '-', and writeTo/readFrom throw as the ESP32 port does)
// and "a pin" (analogRead, 0..1).
// ES5 only, no hoisting: everything is defined before it is used.
import { CONFIG_FILE } from '@proofrig/protocol';

/**
 * Source of the `.boot0` file for a rig whose Node side listens on `port`. The shim is one string
 * evaluated at boot, so its functions live in RAM: the Linux build reads code kept in Storage through
 * an fopen/fread/fclose per chunk (an ESP32 maps flash into memory), which made the per-edge path
 * cost several times more CPU (docs/performance.md).
 */
export function shimSource(port: number): string {
  // The JsVar store is grown first (see above), then the shim is evaluated from RAM.
  return `(function(){var g=[],i=0,k,c=' '.repeat(200);while(process.memory(false).total<16000&&i<4000)for(k=0;k<50;k++)g.push(c+(i++));})();
eval(${JSON.stringify(shimBody(port))});\n`;
}

function shimBody(port: number): string {
  return `(function(){
var fs=require('fs'),T0=getTime(),Q=0,NW=1,W={},P=${port | 0},RX='',S,NX=0,ST=setTimeout,SI=setInterval,TM={};
var MODES=['analog','input','input_pullup','input_pulldown','output','opendrain','opendrain_pullup','af_output','af_opendrain'];
function tx(s){USB.write('\\x01'+s+'\\n');}
function ms(){return ((getTime()-T0)*1000)|0;}
function pin(p){var n=typeof p=='number'?p:(typeof p=='string'&&p.charAt(0)=='D')?parseInt(p.substr(1),10):+p;if(!(n>=0&&n<40&&n==(n|0)))throw new Error('Invalid pin!');return n;}
function pins(p){var j=p.join(','),a,k;if(/^([0-9]|[1-3][0-9])(,([0-9]|[1-3][0-9]))*$/.test(j))return j;a=[];for(k=0;k<p.length;k++)a.push(pin(p[k]));return a.join(',');}
function rd(){try{return fs.readFileSync('pins.fifo');}catch(e){return '';}}
function ask(m){var q=++Q,s,i;tx(m+' '+q);s=rd();i=s?s.indexOf(' '):-1;if(i>0&&s.substr(0,i)==q)return s.substr(i+1);return ask2(m,q);}
function ask2(m,q){var k,s,i;for(k=0;k<2;k++){s=rd();if(s){i=s.indexOf(' ');if(s.substr(0,i)==q)return s.substr(i+1);}}
print('sim: no answer from the rig model to '+m);return '';}
global.digitalWrite=function(p,v){var t=ms();if(Array.isArray(p)){var x=v|0,k;for(k=p.length-1;k>=0;k--){tx('W'+pin(p[k])+' '+(x&1)+' '+t);x>>=1;}return;}tx('W'+pin(p)+' '+(v?1:0)+' '+t);};
global.digitalRead=function(p){if(Array.isArray(p))return +ask('R'+pins(p)+' '+ms());return +ask('R'+pin(p)+' '+ms());};
global.pinMode=function(p,m,a){var n=pin(p);if(m===undefined||m=='auto'){tx('M'+n+' auto');return;}if(MODES.indexOf(m)<0){tx('M'+n+' auto');throw new Error('Unknown pin mode');}tx('M'+n+' '+m+(a?' a':''));};
global.getPinMode=function(p){var m=ask('G'+pin(p));return m=='-'?undefined:m;};
global.analogRead=function(p){return +ask('a'+pin(p)+' '+ms());};
var IS=0,I2=global.I2C1;function ib(a,d){var k,j,x;for(k=0;k<a.length;k++){x=a[k];if(typeof x=='number')d.push(x&255);else if(typeof x=='string')for(j=0;j<x.length;j++)d.push(x.charCodeAt(j)&255);else if(x&&x.length!==undefined)ib(x,d);}return d;}
function ia(a){return typeof a=='object'&&a?+a.address:+a;}
I2.setup=function(o){IS=1;};
I2.writeTo=function(a){if(!IS)throw new Error('I2C device not set up');var n=ia(a),d=[],k;for(k=1;k<arguments.length;k++)ib([arguments[k]],d);if(ask('IW'+n+' '+(d.join(',')||'-')+' '+ms())!='1')throw new Error('I2C: no ACK from address 0x'+n.toString(16));};
I2.readFrom=function(a,q){if(!IS)throw new Error('I2C device not set up');var n=ia(a),s=ask('IR'+n+' '+(q|0)+' '+ms());if(!s||s=='-')throw new Error('I2C: no ACK from address 0x'+n.toString(16));return new Uint8Array(s.split(',').map(Number));};
global.analogWrite=function(p,v,o){var f=o&&o.freq>0?o.freq:0;v=+v||0;tx('A'+pin(p)+' '+Math.min(1,Math.max(0,v))+' '+f+' '+ms());};
global.digitalPulse=function(p,v,t){var n=pin(p);if(t===0)return;if(typeof t=='number'){if(!(t>=0))throw new Error('Pulse Time given for digitalPulse is less than 0, or not a number');t=[t];}
var a=[],k;for(k=0;k<t.length;k++)a.push(+t[k]);tx('P'+n+' '+(v?1:0)+' '+a.join(',')+' '+ms());};
global.setWatch=function(f,p,o){var n=pin(p),rep=false,edge=0,d=-1;if(typeof f!='function'&&typeof f!='string')throw new Error('Function or String not supplied!');
if(typeof o=='object'&&o){rep=!!o.repeat;if(o.edge=='rising'||o.edge===1)edge=1;else if(o.edge=='falling'||o.edge===-1)edge=-1;if(o.data!==undefined){try{d=pin(o.data);}catch(e){d=-1;}}}else rep=!!o;
if(n>=6&&n<=11){print('WARNING: Unable to set watch. GPIO6..11 drive the flash chip and cannot be watched');return undefined;}
var id=NW++;W[id]={f:f,r:rep,e:edge,t:getTime(),q:rep&&!edge&&d>=0&&typeof f=='function'};tx('S'+id+' '+n+' '+d);return id;};
global.clearWatch=function(id){if(arguments.length===0){W={};tx('C*');return;}if(id===undefined)throw new Error('clearWatch(undefined) not allowed. Use clearWatch() instead.');
if(!W[id])throw new Error('Unknown Watch '+id);delete W[id];tx('C'+id);};
function one(id,w,x,t){var ev,f;if(w.e&&(w.e==1)!=(x&1)){w.t=t;return;}ev={state:(x&1)==1,time:t,lastTime:w.t};w.t=t;if(x&6)ev.data=(x&4)!=0;
f=w.f;if(!w.r){delete W[id];tx('C'+id);}try{if(typeof f=='string')eval(f);else f(ev);}catch(e){print('Uncaught '+e);}}
function batch(a){var n=a.length,i=3,k=a[0],b=a[2],id,w,x,t,ev;if(k+a[1]<=NX)return;for(;i<n;i++){x=a[i];if(x<0){id=-x;w=W[id];}else if(k++>=NX){NX=k;if(w){t=(b+(x>>3)/1e3)/1e3;
if(w.q){ev={state:(x&1)==1,time:t,lastTime:w.t,data:(x&4)!=0};w.t=t;try{w.f(ev);}catch(e){print('Uncaught '+e);}}else one(id,w,x,t);w=W[id];}}}}
function pull(){var k,s;for(k in W){s=ask('E'+NX+' '+getTime());if(s)batch(JSON.parse(s));return;}}
function wrap(a,rep){var f=a[0],o={},id,n=rep?SI:ST;if(typeof f!='function')return n.apply(undefined,a);
a[0]=function(){try{pull();}catch(e){print('sim: '+e);}if(TM[id]!==o)return;if(!rep)delete TM[id];return f.apply(this,arguments);};id=n.apply(undefined,a);TM[id]=o;return id;}
global.setTimeout=function(){return wrap(arguments,0);};
global.setInterval=function(){return wrap(arguments,1);};
function unwrap(n){return function(id){var r=n.apply(undefined,arguments);if(arguments.length===0)TM={};else delete TM[id];return r;};}
global.clearTimeout=unwrap(clearTimeout);global.clearInterval=unwrap(clearInterval);
function line(l){var c=l.charAt(0),r;if(c=='['){batch(JSON.parse(l));return;}if(c!='!')return;try{r=JSON.stringify(eval(l.substr(1)));}catch(e){r=JSON.stringify('error: '+e);}tx('V'+r);}
Modules.addCached('Wifi','exports.connect=function(s,o,cb){setTimeout(function(){if(cb)cb(null);},250);};exports.disconnect=function(cb){if(cb)setTimeout(cb,0);};');
try{S=require('net').connect({host:'127.0.0.1',port:P},function(){tx('H');});S.on('data',function(d){var a=(RX+d).split('\\n'),k,n=a.length-1;RX=a[n];for(k=0;k<n;k++)line(a[k]);});}
catch(e){print('sim: cannot reach the rig model on port '+P+': '+e);}
var C;try{C=require('Storage').readJSON(${JSON.stringify(CONFIG_FILE)},1);}catch(e){}tx('J'+(C&&C.board?JSON.stringify(C.board):''));C=undefined;
tx('B');
})();`;
}
