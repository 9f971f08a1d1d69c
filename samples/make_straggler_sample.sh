#!/usr/bin/env bash
# make_straggler_sample.sh [NSL] -- remakes samples/nccl_4rank_straggler.zip
# from the real export beside it: four per-rank exports, each a copy of
# GPU 0 of pytorch_nccl_2gpu_2026.2.sqlite (tests/lua/straggler_rank.sh),
# with clocks shifted by -11, +3, -6 and +8 ms and up to 10 µs of jitter per
# collective; rank 2's host stops 500 µs after every synchronising CUDA call
# (as data loading or Python would), so its GPU waits for the launches and
# the other ranks wait for it at the next collective.  NSL: the nsl binary
# (default build/nsl).
set -euo pipefail
cd "$(dirname "$0")/.."
nsl=${1:-build/nsl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in 0 1 2 3; do
  role=idlewait; [ $r = 2 ] && role=idle
  tests/lua/straggler_rank.sh samples/pytorch_nccl_2gpu_2026.2.sqlite "$tmp/rank$r.sqlite" 0 500000 $role \
    $(( (r * 37 % 23 - 11) * 1000000 )) 10000 $((r + 1))
done
"$nsl" bundle "$tmp"/rank0.sqlite "$tmp"/rank1.sqlite "$tmp"/rank2.sqlite "$tmp"/rank3.sqlite \
  --meta samples/LICENSE.nsys-ai.MIT.txt -o samples/nccl_4rank_straggler.zip \
  --note "derived from pytorch_nccl_2gpu_2026.2.sqlite (nsys-ai, MIT): 4 copies of GPU 0, rank 2's host stops 500 us after every synchronisation (samples/make_straggler_sample.sh)"
