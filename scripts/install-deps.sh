#!/usr/bin/env bash
# Installs the Debian 12 packages nsl builds and tests with (needs root or sudo).
# Tests use sqlite3 (the SQL oracle), tmux (REPL through a terminal), chromium
# (rendered notebooks checked in a real browser), python3 (nbformat check) and
# strace (test_open_once.sh counts the opens and reads of an input);
# clang and libfuzzer-14-dev build the fuzzing harnesses (scripts/fuzz.sh);
# libopenmpi-dev and openmpi-bin build and test distributed runs (mpirun nsl run).
# nsight-systems (NVIDIA's nsys 2022.4, from Debian's non-free component) opens
# .nsys-rep reports, runs `nsl profile`, and serves as the oracle of the tests
# that compare nsl with `nsys stats` and `nsys analyze`; libnvtoolsext1 (NVTX v2,
# whose header only comes with the 2.8 GB nvidia-cuda-dev) lets a test program
# emit NVTX ranges.
# Enabling them adds "contrib non-free" to the Debian apt sources;
# NSL_NO_NONFREE=1 skips both steps (nsl then works without nsys, as before,
# and the tests that need the real nsys say they skip).
set -euo pipefail
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

# Adds contrib and non-free to the Components of every Debian source (deb822
# files under sources.list.d and one-line entries in sources.list); a source
# that has them already is left as is, so running this twice changes nothing.
enable_nonfree() {
  local f tmp changed=0
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -q 'debian' "$f" || continue
    tmp=$(mktemp)
    awk '/^Components:/ {
           c = 0; n = 0
           for (i = 2; i <= NF; i++) { if ($i == "contrib") c = 1; if ($i == "non-free") n = 1 }
           if (!c) $0 = $0 " contrib"
           if (!n) $0 = $0 " non-free"
         }
         { print }' "$f" >"$tmp"
    if ! cmp -s "$f" "$tmp"; then
      echo "install-deps: enabling Debian's contrib and non-free components in $f (for nsight-systems)"
      $SUDO cp "$tmp" "$f"
      changed=1
    fi
    rm -f "$tmp"
  done
  f=/etc/apt/sources.list
  if [ -f "$f" ]; then
    tmp=$(mktemp)
    awk '/^[ \t]*deb(-src)?[ \t]/ && /debian/ {
           m = 0; c = 0; n = 0
           for (i = 2; i <= NF; i++) { if ($i == "main") m = 1; if ($i == "contrib") c = 1; if ($i == "non-free") n = 1 }
           if (m && !c) $0 = $0 " contrib"
           if (m && !n) $0 = $0 " non-free"
         }
         { print }' "$f" >"$tmp"
    if ! cmp -s "$f" "$tmp"; then
      echo "install-deps: enabling Debian's contrib and non-free components in $f (for nsight-systems)"
      $SUDO cp "$tmp" "$f"
      changed=1
    fi
    rm -f "$tmp"
  fi
  [ "$changed" -eq 1 ] || echo "install-deps: Debian's contrib and non-free components are enabled already"
}

nonfree=
if [ "${NSL_NO_NONFREE:-0}" = 1 ]; then
  echo "install-deps: NSL_NO_NONFREE=1: not installing NVIDIA's nsight-systems (non-free); tests that need nsys skip"
else
  enable_nonfree
  nonfree="nsight-systems libnvtoolsext1"
fi

$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  build-essential cmake pkg-config ca-certificates \
  liblua5.4-dev libsqlite3-dev sqlite3 libarchive-dev libstb-dev libjansson-dev nettle-dev \
  zlib1g-dev libzstd-dev libsnappy-dev liblzma-dev libedit-dev libncurses-dev fonts-dejavu-core \
  libcmocka-dev zip unzip xz-utils tmux python3 strace chromium clang libfuzzer-14-dev \
  libopenmpi-dev openmpi-bin $nonfree
