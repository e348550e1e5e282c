#!/usr/bin/env bash
# Build the Espruino 2v29 interpreter for Linux (commit c5ff787b) for the Espruino tier of the tests:
# the same parser, runtime, JsVar store, Storage, `net` and native crypto as the ESP32 build, without
# the ESP32's peripherals (the simulated rig binds the pin functions). Prints the binary's path on its
# last line; reuses a finished build in OUT_DIR.
#
#   scripts/build-espruino.sh [OUT_DIR]        # default OUT_DIR: ~/.cache/proofrig/espruino-c5ff787b
#   ESPRUINO_ESP32_MEM=1 scripts/build-espruino.sh [OUT_DIR]   # 32-bit, the ESP32's 14-byte JsVars
#   PROOFRIG_ESPRUINO="$(scripts/build-espruino.sh | tail -n 1)" npm test
#
# The source: the pinned tarball beside the repository (../shared/espruino/espruino-c5ff787b.tar.gz)
# or $ESPRUINO_SRC_TARBALL when given, else that exact commit downloaded from github.com/espruino/Espruino.
# Either way its tree is checked against a SHA-256 of every file (path and content; the vendored
# targetlibs/ and one prebuilt ESP8266 library excepted, which the Linux target does not use) before
# anything is built. Nothing of Espruino's source is kept in this repository.
# Needs gcc, make, python3 (and curl for the download). About 1-2 minutes on 2 cores.
#
# These changes are applied to the source, all to the Linux (non-embedded) target only:
#  1. Ctrl-C on an empty console line never exits the process (an ESP32 does not exit either).
#  2. Servers the Linux build opens (its --telnet console, net.createServer) listen on 127.0.0.1 only.
#  3. The --telnet console listens on $ESPRUINO_TELNET_PORT when set (default 2323).
#  4. Storage is read through a read-only memory map of ./espruino.flash, as an ESP32 maps its flash.
#  5. Compiled with -Og, the ESP32 board's optimisation flag.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rev=c5ff787b
commit=c5ff787b199148c31ef2776fb6f70673cba01a25
tree_sha256=903a2722e74e79bb16cf66a7606180061e5b9d62ecdc1f058efe55375bb631ed
variant=""; [ "${ESPRUINO_ESP32_MEM:-0}" = 1 ] && variant="-esp32mem"
out="${1:-${HOME}/.cache/proofrig/espruino-${rev}${variant}}"
bin="$out/espruino-${rev}/bin/espruino"
stamp="r2: -Og, Storage memory-mapped"   # a finished build in OUT_DIR with this stamp is reused
if [ -x "$bin" ] && [ "$(cat "$out/.built" 2>/dev/null)" = "$stamp" ]; then echo "$bin"; exit 0; fi
rm -rf "$out"
mkdir -p "$out"
tarball="${ESPRUINO_SRC_TARBALL:-$repo/../shared/espruino/espruino-${rev}.tar.gz}"
if [ -f "$tarball" ]; then
  tar -xzf "$tarball" -C "$out"
else
  command -v curl >/dev/null || { echo "build-espruino.sh: no source tarball at $tarball and no curl to download commit $commit" >&2; exit 1; }
  echo "build-espruino.sh: downloading Espruino $commit" >&2
  curl -fsSL "https://codeload.github.com/espruino/Espruino/tar.gz/$commit" -o "$out/src.tar.gz"
  tar -xzf "$out/src.tar.gz" -C "$out"
  rm -f "$out/src.tar.gz"
  mv "$out/Espruino-$commit" "$out/espruino-${rev}"
fi
got="$(python3 - "$out/espruino-${rev}" <<'PY'
import hashlib, os, sys
root = sys.argv[1]
h = hashlib.sha256()
for dp, dns, fns in os.walk(root):
    rel = os.path.relpath(dp, root)
    dns[:] = sorted(d for d in dns if not (rel == '.' and d in ('targetlibs', '.git')))
    for f in sorted(fns):
        p = os.path.join(dp, f)
        r = os.path.relpath(p, root)
        if os.path.islink(p) or not os.path.isfile(p) or r == 'targets/esp8266/libmirom.a':
            continue
        h.update(r.encode() + b'\0' + hashlib.sha256(open(p, 'rb').read()).hexdigest().encode() + b'\n')
print(h.hexdigest())
PY
)"
[ "$got" = "$tree_sha256" ] || { echo "build-espruino.sh: the Espruino source is not commit $commit (tree SHA-256 $got, expected $tree_sha256)" >&2; exit 1; }
rm -rf "$out/espruino-${rev}/targetlibs"
cd "$out/espruino-${rev}"
# Espruino's Makefile asks git for a version label: give it a repository to ask.
git init -q . && git -c user.email=build@localhost -c user.name=build add -A >/dev/null 2>&1 \
  && git -c user.email=build@localhost -c user.name=build commit -q -m "Espruino ${rev}" >/dev/null
# 1. never exit on Ctrl-C
sed -i 's|if (jsiTimeSinceCtrlC < jshGetTimeFromMilliseconds(5000))|if (0 \&\& jsiTimeSinceCtrlC < jshGetTimeFromMilliseconds(5000))|' src/jsinteractive.c
grep -q 'if (0 && jsiTimeSinceCtrlC' src/jsinteractive.c || { echo "build-espruino.sh: Ctrl-C patch did not apply" >&2; exit 1; }
# 2. servers on loopback only
sed -i -e 's|^\(\s*\)//serverInfo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);|\1serverInfo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);|' \
       -e 's|^\(\s*\)serverInfo.sin_addr.s_addr = INADDR_ANY;|\1//serverInfo.sin_addr.s_addr = INADDR_ANY;|' libs/network/linux/network_linux.c
grep -q '^\s*serverInfo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);' libs/network/linux/network_linux.c \
  && ! grep -q '^\s*serverInfo.sin_addr.s_addr = INADDR_ANY;' libs/network/linux/network_linux.c \
  || { echo "build-espruino.sh: loopback patch did not apply" >&2; exit 1; }
if [ -n "$variant" ]; then
  echo 'int main(void){return 0;}' > "$out/m32.c"
  gcc -m32 "$out/m32.c" -o "$out/m32" 2>/dev/null || { echo "build-espruino.sh: no 32-bit compiler: apt-get install -y gcc-multilib g++-multilib" >&2; exit 1; }
  python3 - <<'PY'
p = 'boards/LINUX.py'
s = open(p).read()
for old, new in [
    ("'variables' :  0, # 0 = resizable variables, rather than fixed", "'variables' :  16383, # the ESP32 board's setting: 14-byte JsVars"),
    ("#     'CFLAGS+=-m32', 'LDFLAGS+=-m32', 'DEFINES+=-DUSE_CALLFUNCTION_HACK', # For testing 32 bit builds",
     "     'CFLAGS+=-m32', 'LDFLAGS+=-m32', 'DEFINES+=-DUSE_CALLFUNCTION_HACK', # For testing 32 bit builds"),
    ("     'TENSORFLOW',\n", ""),
]:
    assert s.count(old) == 1, 'esp32mem patch did not apply: ' + old[:40]
    s = s.replace(old, new)
open(p, 'w').write(s)
PY
fi
# 3. telnet port from the environment
python3 - <<'PY'
p = 'libs/network/telnet/jswrap_telnet.c'
s = open(p).read()
old = '  int sock = netCreateSocket(net, ST_NORMAL, 0, PORT, NULL)+1;'
new = ('  int port = PORT;\n'
       '#ifdef LINUX\n'
       '  { const char *e = getenv("ESPRUINO_TELNET_PORT"); if (e && atoi(e) > 0 && atoi(e) < 65536) port = atoi(e); }\n'
       '#endif\n'
       '  int sock = netCreateSocket(net, ST_NORMAL, 0, (unsigned short)port, NULL)+1;')
assert s.count(old) == 1, 'telnet port patch did not apply'
s = s.replace(old, new)
s = s.replace('#ifdef LINUX\n#define PORT 2323', '#ifdef LINUX\n#include <stdlib.h>\n#define PORT 2323', 1)
assert '#include <stdlib.h>' in s, 'telnet include patch did not apply'
open(p, 'w').write(s)
PY
# 4. Storage reads through a read-only memory map of the flash file
python3 - <<'PY'
p = 'targets/linux/jshardware.c'
s = open(p).read()
old = 'void jshFlashRead(void *buf, uint32_t addr, uint32_t len) {'
new = '''#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
/* The flash file mapped read-only, as an ESP32 maps its flash. Writes and erases below go through
 * stdio into the same page cache, so the map always shows them. Mapped once the file is full size. */
static unsigned char *jshFlashMap = 0;
static void jshFlashMapTry() {
  if (jshFlashMap) return;
  int fd = open(FAKE_FLASH_FILENAME, O_RDONLY);
  if (fd < 0) return;
  struct stat st;
  size_t size = (size_t)FAKE_FLASH_BLOCKSIZE*FAKE_FLASH_BLOCKS;
  if (fstat(fd, &st) == 0 && (size_t)st.st_size >= size) {
    void *m = mmap(0, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) jshFlashMap = (unsigned char *)m;
  }
  close(fd);
}
''' + old
assert s.count(old) == 1, 'flash map patch did not apply (function)'
s = s.replace(old, new)
old2 = '''  addr -= FLASH_START;

  FILE *f = jshFlashOpenFile(true);
  if (!f) { // no file, so it's all 0xFF'''
new2 = '''  addr -= FLASH_START;

  jshFlashMapTry();
  if (jshFlashMap && (size_t)addr + len <= (size_t)FAKE_FLASH_BLOCKSIZE*FAKE_FLASH_BLOCKS) {
    memcpy(buf, jshFlashMap + addr, len);
    return;
  }
  FILE *f = jshFlashOpenFile(true);
  if (!f) { // no file, so it's all 0xFF'''
assert s.count(old2) == 1, 'flash map patch did not apply (read)'
s = s.replace(old2, new2)
open(p, 'w').write(s)
PY
# 5. the ESP32 board's optimisation flag (boards/ESP32.py: -Og)
make -j"$(nproc)" OPTIMIZEFLAGS=-Og >"$out/build.log" 2>&1 || { tail -n 30 "$out/build.log" >&2; echo "build-espruino.sh: make failed (log: $out/build.log)" >&2; exit 1; }
[ -x "$bin" ] || { echo "build-espruino.sh: no binary at $bin" >&2; exit 1; }
echo "$stamp" > "$out/.built"
echo "$bin"
