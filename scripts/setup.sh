#!/usr/bin/env bash
# Set-up in one command: install the build dependencies, build nsl, and run
# the main job (the summary analysis) on the sample export shipped in samples/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
build/nsl run summary samples/pytorch_nccl_2gpu_2026.2.sqlite
