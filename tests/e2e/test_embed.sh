#!/usr/bin/env bash
# libnsl embeds in other C programs: install into a temporary prefix, compile
# tests/embed/kernels_total.c against the installed header and library, and
# compare its kernel count and total time with SQL on the same export.
. "$(dirname "$0")/lib.sh"
: "${NSL_BUILD_DIR:?}" "${NSL_SOURCE_DIR:?}"
cmake --install "$NSL_BUILD_DIR" --prefix "$TMP/prefix" > "$TMP/install.log" 2>&1 \
  && ok "cmake --install" || { bad "cmake --install: $(tail -3 "$TMP/install.log")"; finish; exit 1; }
[ -f "$TMP/prefix/include/nsl/nsl.h" ] && ok "public header installed" || bad "nsl.h not installed"
san=
grep -q '^CMAKE_BUILD_TYPE:STRING=Asan' "$NSL_BUILD_DIR/CMakeCache.txt" && san="-fsanitize=address,undefined"
if cc $san -std=c11 -I"$TMP/prefix/include" "$NSL_SOURCE_DIR/tests/embed/kernels_total.c" -L"$TMP/prefix/lib" -lnsl \
      -Wl,-rpath,"$TMP/prefix/lib" -o "$TMP/kernels_total" 2> "$TMP/cc.log"; then ok "compiles against libnsl"
else bad "compile: $(head -5 "$TMP/cc.log")"; finish; exit 1; fi
for f in "$NSL_DATA_DIR"/nsys/pytorch_nccl_2gpu_2026.2.sqlite "$NSL_DATA_DIR"/nsys/cuda_2021.2.sqlite; do
  want=$(sql "$f" "SELECT count(*) || ' kernels, ' || sum(end - start) || ' ns' FROM CUPTI_ACTIVITY_KIND_KERNEL")
  check_eq "$(basename "$f"): embedded program = SQL" "$("$TMP/kernels_total" "$f")" "$want"
done
finish
