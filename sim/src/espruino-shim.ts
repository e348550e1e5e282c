// The Storage `.boot0` that binds a real Espruino interpreter's pin functions to the rig model in
// Node (the Espruino engine). It runs before the firmware at every boot. Channel:
// - interpreter → Node: lines "\x01<msg>\n" on the process's stdout (Espruino writes its console
//   straight to stdout with fflush per byte: no Nagle, no batching);
// - Node → interpreter: watch edges as lines on a loopback TCP socket (Node sets TCP_NODELAY; the
//   interpreter picks them up on its next idle loop);
// - digitalRead/getPinMode are synchronous on the chip, so they are a round trip: the read request
//   goes out on stdout (after every earlier write, in order) and the shim blocks reading the named
//   pipe `pins.fifo` in its working folder until Node answers there (about 1 ms on a loaded 2-core
//   machine; a busy-wait on a plain file measured 11 ms, because it competes with Node for the
//   CPU). The level read is the model's level after every earlier write, never a stale mirror.
// - JsVar store: the ESP32 allocates its store once at boot (up to 16,383 JsVars); the 64-bit Linux
//   build starts with 4,096 and grows only when no single JsVar is free, never for a flat string
//   (an ArrayBuffer such as every crypto.SHA256 result), so at ~3,000 in use it fails those
//   ("Not enough memory for result") where the chip would not. The shim grows it to 16,384 first.
// ES5 only, no hoisting: everything is defined before it is used.

/** Source of the `.boot0` file for a rig whose Node side listens on `port`. */
export function shimSource(port: number): string {
  return `(function(){var g=[],i=0,k,c=' '.repeat(200);while(process.memory(false).total<16000&&i<4000)for(k=0;k<50;k++)g.push(c+(i++));})();
(function(){
var fs=require('fs'),Q=0,NW=1,W={},P=${port|0},RX='',S;
var MODES=['analog','input','input_pullup','input_pulldown','output','opendrain','opendrain_pullup','af_output','af_opendrain'];
function tx(s){USB.write('\\x01'+s+'\\n');}
function pin(p){var n=(typeof p=='string'&&p.charAt(0)=='D')?parseInt(p.substr(1),10):+p;if(!(n>=0&&n<40&&n==(n|0)))throw new Error('Invalid pin!');return n;}
function ask(m){Q++;tx(m+' '+Q);var k,s,i;for(k=0;k<3;k++){try{s=fs.readFileSync('pins.fifo');}catch(e){s='';}if(s){i=s.indexOf(' ');if(s.substr(0,i)==Q)return s.substr(i+1);}}
print('sim: no answer from the rig model to '+m);return '';}
global.digitalWrite=function(p,v){if(Array.isArray(p)){var x=v|0,k;for(k=p.length-1;k>=0;k--){tx('W'+pin(p[k])+' '+(x&1));x>>=1;}return;}tx('W'+pin(p)+' '+(v?1:0));};
global.digitalRead=function(p){if(Array.isArray(p)){var x=0,k;for(k=0;k<p.length;k++)x=(x<<1)|(+ask('R'+pin(p[k])));return x;}return +ask('R'+pin(p));};
global.pinMode=function(p,m,a){var n=pin(p);if(m===undefined||m=='auto'){tx('M'+n+' auto');return;}if(MODES.indexOf(m)<0){tx('M'+n+' auto');throw new Error('Unknown pin mode');}tx('M'+n+' '+m+(a?' a':''));};
global.getPinMode=function(p){var m=ask('G'+pin(p));return m=='-'?undefined:m;};
global.analogWrite=function(p,v,o){var f=o&&o.freq>0?o.freq:0;v=+v||0;tx('A'+pin(p)+' '+Math.min(1,Math.max(0,v))+' '+f);};
global.digitalPulse=function(p,v,t){var n=pin(p);if(t===0)return;if(typeof t=='number'){if(!(t>=0))throw new Error('Pulse Time given for digitalPulse is less than 0, or not a number');t=[t];}
var a=[],k;for(k=0;k<t.length;k++)a.push(+t[k]);tx('P'+n+' '+(v?1:0)+' '+a.join(','));};
global.setWatch=function(f,p,o){var n=pin(p),rep=false,edge=0,d=-1;if(typeof f!='function'&&typeof f!='string')throw new Error('Function or String not supplied!');
if(typeof o=='object'&&o){rep=!!o.repeat;if(o.edge=='rising'||o.edge===1)edge=1;else if(o.edge=='falling'||o.edge===-1)edge=-1;if(o.data!==undefined){try{d=pin(o.data);}catch(e){d=-1;}}}else rep=!!o;
if(n>=6&&n<=11){print('WARNING: Unable to set watch. GPIO6..11 drive the flash chip and cannot be watched');return undefined;}
var id=NW++;W[id]={f:f,r:rep,e:edge,t:getTime()};tx('S'+id+' '+n+' '+d);return id;};
global.clearWatch=function(id){if(arguments.length===0){W={};tx('C*');return;}if(id===undefined)throw new Error('clearWatch(undefined) not allowed. Use clearWatch() instead.');
if(!W[id])throw new Error('Unknown Watch '+id);delete W[id];tx('C'+id);};
function edge(l){var a=l.split(' '),w=W[a[0]],st,ev;if(!w)return;st=a[1]=='1';
if((w.e==1&&!st)||(w.e==-1&&st)){w.t=a[2]/1000;return;}if(!w.r){delete W[a[0]];tx('C'+a[0]);}
ev={state:st,time:a[2]/1000,lastTime:w.t};if(a[3]!='-')ev.data=a[3]=='1';w.t=ev.time;if(typeof w.f=='string')eval(w.f);else w.f(ev);}
function line(l){if(l.charAt(0)=='!'){var r;try{r=JSON.stringify(eval(l.substr(1)));}catch(e){r=JSON.stringify('error: '+e);}tx('V'+r);return;}edge(l);}
Modules.addCached('Wifi','exports.connect=function(s,o,cb){setTimeout(function(){if(cb)cb(null);},250);};exports.disconnect=function(cb){if(cb)setTimeout(cb,0);};');
try{S=require('net').connect({host:'127.0.0.1',port:P},function(){tx('H');});S.on('data',function(d){var a=(RX+d).split('\\n'),k,n=a.length-1;RX=a[n];for(k=0;k<n;k++)line(a[k]);});}
catch(e){print('sim: cannot reach the rig model on port '+P+': '+e);}
tx('B');
})();
`;
}
