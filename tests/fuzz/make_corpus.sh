#!/usr/bin/env bash
# tests/fuzz/make_corpus.sh -- (re)makes the seed corpora of tests/fuzz/corpus
# from the real data in ../shared/data: small nsys exports trimmed by SQL (a
# dozen rows a table, 512-byte pages), an nsl bundle of one, Parquet and xz
# members and a decompressed HloProto of the nsys-jax archives.  The class
# maps are written here (their formats: vLLM gputrc2graph, GPU Performance
# Analyzer).  Crash inputs kept in the corpora (crash-*) are left alone.
# Usage: tests/fuzz/make_corpus.sh [NSL_BINARY]   (default build/nsl)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
nsl=${1:-$root/build/nsl}
data=${NSL_DATA_DIR:-$root/../shared/data}
out=$root/tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for d in nsys_sqlite bundle parquet hlo xz manifest classmap colcache analyses_sqlite analyses_csv; do
  mkdir -p "$out/$d"
  find "$out/$d" -name 'seed-*' -delete
done

# A trimmed export: the tables the loader maps, 12 rows each, the strings
# they name, and small pages.
trim() { # trim SRC DST
  cp "$1" "$2"
  chmod u+w "$2"
  local keep="'StringIds','META_DATA_EXPORT','EXPORT_META_DATA','TARGET_INFO_SESSION_START_TIME',
    'TARGET_INFO_SYSTEM_ENV','TARGET_INFO_GPU','TARGET_INFO_CUDA_DEVICE','TARGET_INFO_CUDA_GPU','PROCESSES',
    'ThreadNames','CUPTI_ACTIVITY_KIND_KERNEL','CUPTI_ACTIVITY_KIND_MEMCPY','CUPTI_ACTIVITY_KIND_MEMSET',
    'CUPTI_ACTIVITY_KIND_RUNTIME','CUPTI_ACTIVITY_KIND_SYNCHRONIZATION','CUPTI_ACTIVITY_KIND_OVERHEAD',
    'NVTX_EVENTS','OSRT_API','COMPOSITE_EVENTS','SAMPLING_CALLCHAINS','CUDA_GPU_MEMORY_USAGE_EVENTS',
    'ENUM_CUDA_MEMCPY_OPER','ENUM_CUDA_MEM_KIND','ENUM_CUPTI_SYNC_TYPE'"
  local t
  for t in $(sqlite3 "$2" "SELECT name FROM sqlite_master WHERE type='table' AND name NOT IN ($keep)"); do
    sqlite3 "$2" "DROP TABLE \"$t\""
  done
  for t in $(sqlite3 "$2" "SELECT name FROM sqlite_master WHERE type='table' AND name NOT IN
                           ('StringIds','META_DATA_EXPORT','EXPORT_META_DATA','TARGET_INFO_SYSTEM_ENV')
                           AND name NOT LIKE 'ENUM_%'"); do
    sqlite3 "$2" "DELETE FROM \"$t\" WHERE rowid NOT IN (SELECT rowid FROM \"$t\" ORDER BY rowid LIMIT 12)"
  done
  # the host and version rows of the environment table, and the strings
  # the kept rows name through the columns the loader reads as string ids
  if [ "$(sqlite3 "$2" "SELECT count(*) FROM sqlite_master WHERE name = 'TARGET_INFO_SYSTEM_ENV'")" = 1 ]; then
    sqlite3 "$2" "DELETE FROM TARGET_INFO_SYSTEM_ENV WHERE name NOT IN ('Hostname', 'TargetInstallDir')"
  fi
  local ids="" c
  for t in $(sqlite3 "$2" "SELECT name FROM sqlite_master WHERE type='table' AND name <> 'StringIds'"); do
    for c in $(sqlite3 "$2" "SELECT name FROM pragma_table_info('$t') WHERE name IN ('nameId', 'shortName',
                             'demangledName', 'mangledName', 'textId', 'symbol', 'module')"); do
      ids="$ids UNION SELECT \"$c\" FROM \"$t\" WHERE \"$c\" IS NOT NULL"
    done
  done
  sqlite3 "$2" "DELETE FROM StringIds WHERE id NOT IN (SELECT 0 $ids)"
  sqlite3 "$2" "PRAGMA page_size = 1024; VACUUM;"
}
trim "$data/nsys/tiny_2026.1.sqlite" "$out/nsys_sqlite/seed-tiny_2026.1.sqlite"
trim "$data/nsys/nvfuser_2024.6.sqlite" "$out/nsys_sqlite/seed-nvfuser_2024.6.sqlite"
trim "$data/nsys/cuda_2021.2.sqlite" "$out/nsys_sqlite/seed-cuda_2021.2.sqlite"
trim "$data/nsys/mpi_cuda_rank0_2022.2.sqlite" "$out/nsys_sqlite/seed-mpi_cuda_rank0_2022.2.sqlite"

# The analyses' harnesses: the same trimmed exports, and the nsys stats CSV
# files of one (tests/e2e/make_stats_csv.sh, SQL through sqlite3).
for n in tiny_2026.1 mpi_cuda_rank0_2022.2 nvfuser_2024.6; do
  cp "$out/nsys_sqlite/seed-$n.sqlite" "$out/analyses_sqlite/seed-$n.sqlite"
done
bash "$root/tests/e2e/make_stats_csv.sh" "$data/nsys/tiny_2026.1.sqlite" "$tmp/csv"
for f in "$tmp"/csv_*.csv; do cp "$f" "$out/analyses_csv/seed-${f##*/csv_}"; done

# The same export with a StringIds page in the middle of the table damaged
# (0xff bytes): the read of the strings fails part-way (issue 15's crash of
# the load after it).
d="$out/nsys_sqlite/seed-damaged-stringids_2026.1.sqlite"
cp "$out/nsys_sqlite/seed-tiny_2026.1.sqlite" "$d"
n=$(sqlite3 "$d" "SELECT count(*) FROM dbstat WHERE name = 'StringIds' AND pagetype = 'leaf'")
pg=$(sqlite3 "$d" "SELECT pageno FROM dbstat WHERE name = 'StringIds' AND pagetype = 'leaf' ORDER BY pageno
                   LIMIT 1 OFFSET $((n / 2))")
head -c 1024 /dev/zero | tr '\0' '\377' | dd of="$d" bs=1024 seek=$((pg - 1)) conv=notrunc 2> /dev/null

# An nsl bundle of a trimmed export with a source file, and its manifest.
cp "$out/nsys_sqlite/seed-tiny_2026.1.sqlite" "$tmp/tiny.sqlite"
printf 'print("train")\n' > "$tmp/train.py"
(cd "$tmp" && "$nsl" bundle tiny.sqlite --rank 0 --source train.py -o b.zip > /dev/null)   # relative member names
cp "$tmp/b.zip" "$out/bundle/seed-bundle.zip"
unzip -p "$tmp/b.zip" manifest.json > "$out/manifest/seed-manifest.json"

# nsys-jax members: small Parquet files, xz streams, an HloProto; and a
# plain zip (an archive without manifest) of a few of them.
jax="$data/nsys-jax/pax_fsdp4_4proc_proc0.zip"
(cd "$tmp" && unzip -q -o "$jax" nvtx_gpu_proj_trace/files.parquet device-metadata.parquet \
   'dump/module_0003.jit_convert_element_type.*' 'dump/module_0001.jit__psum.autotune_results.pbtxt.xz')
cp "$tmp/nvtx_gpu_proj_trace/files.parquet" "$out/parquet/seed-files.parquet"
cp "$tmp/device-metadata.parquet" "$out/parquet/seed-device-metadata.parquet"
cp "$data/nsys-jax/mini/module_0001.jit__psum.before_optimizations.hlo.pb.xz" "$out/xz/seed-psum-before.hlo.pb.xz"
cp "$tmp/dump/module_0001.jit__psum.autotune_results.pbtxt.xz" "$out/xz/seed-autotune.pbtxt.xz"
xz -dc "$data/nsys-jax/mini/module_0001.jit__psum.before_optimizations.hlo.pb.xz" > "$out/hlo/seed-psum-before.hlo.pb"
xz -dc "$data/nsys-jax/mini/module_0001.jit__psum.sm_8.0_gpu_after_optimizations.hlo.pb.xz" \
  > "$out/hlo/seed-psum-after.hlo.pb"
(cd "$tmp" && zip -q -X raw.zip nvtx_gpu_proj_trace/files.parquet dump/module_0003.jit_convert_element_type.*)
cp "$tmp/raw.zip" "$out/bundle/seed-raw.zip"

# Class maps, one per format nsl.classes reads.
printf '%s\n' '{"gemm|nvjet": "gemm", "flash|fmha": "attn", "nccl": "comm", "elementwise": "ew"}' \
  > "$out/classmap/seed-vllm-flat.json"
printf '%s\n' '{"vllm": {"llama": {"gemm": "gemm", "_norm_|Norm": "norm"}, "ds": {"^void at::native::": "aten"}}}' \
  > "$out/classmap/seed-vllm-nested.json"
printf '%s\n' '{"vllm": {"llama": {"layer_anno": {"Stage": {".*": "layer"}, "Substage": {"gemm": "gemm"}}}}}' \
  > "$out/classmap/seed-vllm-layer-anno.json"
printf '%s\n' '{"inputs": [{"format": "csv", "title": "t"}], "kernel_to_class_map": {"GEMM": "GEMM", "nvjet": "gemm", "layer_norm": "norm"}}' \
  > "$out/classmap/seed-gpa.json"
# Columnar cache files of the trimmed export (a string column, a time column,
# a table description), each after the selector byte of fuzz_colcache.c:
# 0x80 + type (sealed), so they pass the checks as they are.
NSL_CACHE_DIR="$tmp/cache" "$nsl" run summary "$out/nsys_sqlite/seed-tiny_2026.1.sqlite" > /dev/null
e=$(ls -d "$tmp"/cache/columns/*/ | head -1)
{ printf '\x83'; cat "$e/c-kernels-demangled"; } > "$out/colcache/seed-str"
{ printf '\x80'; cat "$e/c-kernels-start"; } > "$out/colcache/seed-i64"
{ printf '\xc0'; cat "$e/c-kernels-start"; } > "$out/colcache/seed-i64-offset"
{ printf '\x80'; cat "$e/t-kernels"; } > "$out/colcache/seed-table"
du -sh "$out"/*
