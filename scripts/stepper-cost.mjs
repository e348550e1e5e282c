// Instructions per encoder edge and per profile tick on the interpreter (PROOFRIG_ESPRUINO, valgrind
// callgrind inside JS callbacks), split between the pin shim and the firmware; docs/chip-speed.md.
// Usage: node scripts/stepper-cost.mjs [firmware file]   (K=edges/ticks per run, KINDS=comma list)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
const ROOT = process.env.ROOT || join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.PROOFRIG_ESPRUINO;
const dir = mkdtempSync(join(tmpdir(), 's25-cost-'));
buildSync({ entryPoints: [join(ROOT, 'sim/src/espruino-shim.ts')], format: 'esm', platform: 'node', bundle: true, outfile: join(dir, 'shim.mjs'), logLevel: 'silent'});
let shimSrc;
try { const m = await import(join(dir, 'shim.mjs')); shimSrc = m.shimSource(1); } catch (e) { console.error(e); process.exit(1); }
const body = JSON.parse(/eval\((".*")\);\n$/s.exec(shimSrc)[1]);
const batchFn = body.slice(body.indexOf('function batch(a)'), body.indexOf('function pull()'));
const fwFile = process.argv[2] || join(ROOT, 'firmware/dist/proofrig.js');
let fw = readFileSync(fwFile, 'utf8');
const mv = /n:"stepper\.move",[^}]*?run:(\w+)/.exec(fw)[1];
const hm = /n:"stepper\.home",[^}]*?run:(\w+)/.exec(fw)[1];
const tail = fw.lastIndexOf('})(Math');
fw = fw.slice(0, tail) + `;global.__mv=${mv};global.__hm=${hm};` + fw.slice(tail);
const board = JSON.parse(readFileSync(join(ROOT, 'boards/stepper-rig.json'), 'utf8'));
const cfg = { dev: 'cost-1', secret: 'ab'.repeat(16), host: 'ws://127.0.0.1:9/x', board };
const prelude = `
var HOME=1, WCB={}, TK=null, NREAD=0;
global.digitalRead=function(p){return p===16?HOME:1;};
global.digitalWrite=function(p,v){};
global.pinMode=function(p,m){};
global.analogWrite=function(p,v,o){};
global.setWatch=function(f,p,o){WCB[p]=f;return p+1;};
var SI0=setInterval;global.setInterval=function(f,t){if(t===20){TK=f;return SI0(function(){},1e6);}return SI0(f,t);};
require('Storage').writeJSON('proofrig.json',${JSON.stringify(cfg)});
eval(${JSON.stringify(fw)});
__hm(0,{axis:'x'});          // home switch open: homing starts
HOME=0; WCB[16]({state:false,time:getTime(),lastTime:getTime()}); // the home switch closes: homed
HOME=1;
__mv(1,{axis:'x',mm:150});   // the move starts: TK is its tick
var W={},NX=0,QF=${process.env.SLOW ? 'false' : 'true'};
${batchFn}
function noop(e){}
`;
function script(kind, K) {
  // Edge events alternate state with B (data) so the count moves +1 each.
  return prelude + `
setTimeout(function(){
  var K=${K}, k, ev, cb=WCB[34], s=[], base=getTime()*1000;
  ${kind === 'fwEdge' ? `for(k=0;k<K;k++){ev={state:(k&1)==1,time:base/1000+k*0.0013,lastTime:base/1000+(k-1)*0.0013,data:(k&1)==0};cb(ev);}` : ''}
  ${kind === 'emptyEdge' ? `for(k=0;k<K;k++){ev={state:(k&1)==1,time:base/1000+k*0.0013,lastTime:base/1000+(k-1)*0.0013,data:(k&1)==0};noop(ev);}` : ''}
  ${kind === 'shimEdge' || kind === 'shimNoop' ? `W[1]={f:${kind === 'shimEdge' ? 'cb' : 'noop'},r:true,e:0,t:base/1000,q:QF};
     for(k=0;k<K;k+=3){s.push(JSON.stringify([k,3,base,-1,(k*1300)*8+((k&1)?1:4),((k+1)*1300)*8+(((k+1)&1)?1:4),((k+2)*1300)*8+(((k+2)&1)?1:4)]));}
     for(k=0;k<s.length;k++){batch(JSON.parse(s[k]));}` : ''}
  ${kind === 'shimPrep' ? `W[1]={f:cb,r:true,e:0,t:base/1000};
     for(k=0;k<K;k+=3){s.push(JSON.stringify([k,3,base,-1,(k*1300)*8+((k&1)?1:4),((k+1)*1300)*8+(((k+1)&1)?1:4),((k+2)*1300)*8+(((k+2)&1)?1:4)]));}` : ''}
  ${kind === 'tick' ? `for(k=0;k<K;k++){TK();}` : ''}
  ${kind === 'read' ? `for(k=0;k<K;k++){digitalRead(27);}` : ''}
  print('done',${kind === 'tick' ? 'TK===null' : '0'});quit();
},5);
`;
}
function count(kind, K) {
  const f = join(dir, `${kind}${K}.js`);
  writeFileSync(f, script(kind, K));
  const out = execFileSync('bash', ['-c', `valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no --toggle-collect=jsiExecuteEventCallbackInner "$B" "$F" </dev/null 2>&1`], { cwd: dir, env: { ...process.env, B: bin, F: f }, encoding: 'utf8' });
  const m = /Collected : (\d+)/.exec(out);
  if (!m || !/done/.test(out)) throw new Error(`no result: ${out.slice(-2000)}`);
  return Number(m[1]);
}
const K = Number(process.env.K || 300);
const per = (kind, k = K) => (count(kind, k) - count(kind, 0)) / k;
const r = {};
for (const kind of (process.env.KINDS || 'fwEdge,emptyEdge,shimEdge,shimNoop,shimPrep,tick,read').split(',')) r[kind] = Math.round(per(kind));
console.log(JSON.stringify(r));
