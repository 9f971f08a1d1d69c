#!/usr/bin/env bash
# Loads split into rowid ranges on several connections (the path large exports
# take) against SQL on the same file: every row once, strings and enums
# resolved, NVTX event types filtered, and the runtime + driver API tables
# concatenated.  The driver table is derived from the export itself: a copy
# whose CUPTI_ACTIVITY_KIND_DRIVER (same nsys schema as the runtime table) takes
# every third runtime call.
. "$(dirname "$0")/lib.sh"
export NSL_NO_CACHE=1   # the SQLite loader itself, every time (not its columns from the cache)
src="$NSL_DATA_DIR/nsys/pytorch_nccl_2gpu_2026.2.sqlite"
fx="$TMP/driver.sqlite"
cp "$src" "$fx"
chmod u+w "$fx"
sqlite3 "$fx" "CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid % 3 = 0;
               DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid % 3 = 0;"

cat > "$TMP/dump.lua" <<'LUA'
-- per table: rows, and an order-independent digest of each column
return { run = function(trace)
  local function line(label, t, cols)
    t:load(cols)
    local parts = {label, #t}
    for _, c in ipairs(cols) do
      local col = t[c]
      if col:type() == "str" then
        local g = t:group_by(c):agg{"n=count"}
        local acc = {}
        for i = 1, #g do acc[#acc + 1] = tostring(g[c][i]) .. "=" .. g.n[i] end
        table.sort(acc)
        parts[#parts + 1] = table.concat(acc, ";")
      else
        parts[#parts + 1] = tostring(col:sum())
      end
    end
    print(table.concat(parts, "|"))
  end
  line("api", trace.api, {"source", "name", "start", "corr"})
  line("kernels", trace.kernels, {"name", "start", "stop"})
  line("memcpy", trace.memcpy, {"kind", "bytes"})
  line("nvtx", trace.nvtx, {"kind", "domain", "text", "start"})
end }
LUA
serial=$(NSL_THREADS=1 "$NSL" run "$TMP/dump.lua" "$fx") || bad "serial load"
for t in 2 3 5; do
  par=$(NSL_THREADS=$t NSL_PARALLEL_MIN_ROWS=1 "$NSL" run "$TMP/dump.lua" "$fx") || bad "parallel load ($t threads)"
  check_eq "$t threads: the same tables as one scan" "$par" "$serial"
done

# the oracle for the parallel loads: SQL
par=$(NSL_THREADS=3 NSL_PARALLEL_MIN_ROWS=1 "$NSL" run "$TMP/dump.lua" "$fx")
api=$(echo "$par" | grep '^api|')
check_eq "api rows" "$(echo "$api" | cut -d'|' -f2)" \
  "$(sql "$fx" "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_DRIVER)")"
check_eq "api sources" "$(echo "$api" | cut -d'|' -f3)" \
  "driver=$(sql "$fx" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_DRIVER");runtime=$(sql "$fx" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")"
check_eq "api start sum" "$(echo "$api" | cut -d'|' -f5)" \
  "$(sql "$fx" "SELECT (SELECT sum(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME) + (SELECT sum(start) FROM CUPTI_ACTIVITY_KIND_DRIVER)")"
launches=$(echo "$api" | cut -d'|' -f4 | tr ';' '\n' | grep '^cudaLaunchKernel=' | cut -d= -f2)
check_eq "cudaLaunchKernel calls" "$launches" \
  "$(sql "$fx" "SELECT count(*) FROM (SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME UNION ALL SELECT nameId FROM CUPTI_ACTIVITY_KIND_DRIVER) a
                JOIN StringIds s ON s.id = a.nameId WHERE s.value LIKE 'cudaLaunchKernel%'")"
nv=$(echo "$par" | grep '^nvtx|')
check_eq "nvtx rows (types 34, 59, 60)" "$(echo "$nv" | cut -d'|' -f2)" \
  "$(sql "$fx" "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)")"
check_eq "nvtx start sum" "$(echo "$nv" | cut -d'|' -f6)" \
  "$(sql "$fx" "SELECT sum(start) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)")"
check_eq "nvtx distinct texts" "$(echo "$nv" | cut -d'|' -f5 | tr ';' '\n' | grep -c .)" \
  "$(sql "$fx" "SELECT count(DISTINCT coalesce(e.text, s.value)) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
                WHERE eventType IN (34, 59, 60)")"
k=$(echo "$par" | grep '^kernels|')
check_eq "kernel stop sum" "$(echo "$k" | cut -d'|' -f5)" "$(sql "$fx" "SELECT sum(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")"

# A damaged page met by one part: one line naming the file, exit 1, no crash.
damaged="$TMP/damaged.sqlite"
cp "$src" "$damaged"
chmod u+w "$damaged"
head -c 3000 /dev/zero | tr '\0' '\377' | dd of="$damaged" bs=1 seek=1800000 conv=notrunc 2>/dev/null
for t in 1 3; do
  NSL_THREADS=$t NSL_PARALLEL_MIN_ROWS=1 "$NSL" run nvtx "$damaged" > /dev/null 2> "$TMP/err.txt"
  rc=$?
  check_eq "damaged page, $t threads: exit code" "$rc" 1
  check_eq "damaged page, $t threads: one line" "$(wc -l < "$TMP/err.txt")" 1
  grep -q "damaged.sqlite' is truncated or corrupt" "$TMP/err.txt" && ok "damaged page, $t threads: names the file" ||
    bad "damaged page, $t threads: message: $(cat "$TMP/err.txt")"
done
finish
