#!/usr/bin/env bash
# Set-up in one command: install the build dependencies, build nsl, and run
# the main job -- which rank holds the others back, and why -- on the
# multi-rank sample bundle shipped in samples/ (its verdict prints first).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
build/nsl run analyses/straggler.lua samples/nccl_4rank_straggler.zip
