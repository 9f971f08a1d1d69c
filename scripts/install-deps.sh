#!/usr/bin/env bash
# Installs the Debian 12 packages nsl builds and tests with (needs root or sudo).
# Tests use sqlite3 (the SQL oracle), tmux (REPL through a terminal), chromium
# (rendered notebooks checked in a real browser) and python3 (nbformat check);
# clang and libfuzzer-14-dev build the fuzzing harnesses (scripts/fuzz.sh);
# libopenmpi-dev and openmpi-bin build and test distributed runs (mpirun nsl run).
set -euo pipefail
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  build-essential cmake pkg-config ca-certificates \
  liblua5.4-dev libsqlite3-dev sqlite3 libarchive-dev libstb-dev libjansson-dev nettle-dev \
  zlib1g-dev libzstd-dev libsnappy-dev liblzma-dev libedit-dev libncurses-dev fonts-dejavu-core \
  libcmocka-dev zip unzip xz-utils tmux python3 chromium clang libfuzzer-14-dev \
  libopenmpi-dev openmpi-bin
