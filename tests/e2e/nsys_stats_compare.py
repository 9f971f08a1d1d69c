#!/usr/bin/env python3
"""nsys_stats_compare.py KIND NSYS_CSV NSL_CSV -- compares one `nsys stats` report of nsys 2022.4 (the oracle,
NVIDIA's own script) with the matching table of nsl's `summary`/`nvtx` output (--format csv), after mapping
their grouping and names; prints one line per difference (none: they agree) and exits 1 when any.
KIND: gpukernsum (nsys groups by name, grid and block: its rows are merged per name -- counts and totals
added, min of the minima, max of the maxima; the mean, median and deviation are compared only for names with
one launch configuration), cudaapisum, gpumemtimesum (2022.4 names memcpy kinds "DtoH" where nsl, like later
nsys, says "Device-to-Host"), gpumemsizesum (MB with 3 decimals), nvtxsum (per style and range)."""
import csv
import sys

kind, nsys_path, nsl_path = sys.argv[1:4]
MEM = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device", "HtoH": "Host-to-Host",
       "PtoP": "Peer-to-Peer", "HtoA": "Host-to-Array", "AtoH": "Array-to-Host", "AtoA": "Array-to-Array",
       "AtoD": "Array-to-Device", "DtoA": "Device-to-Array"}


def rows(path, first, section=None):
    """The table whose header starts with `first` (after the line "# ... (section)" when a section is named:
    nsl's titles; nsys's "Processing ..." line is left out): a list of dicts."""
    out, header, inside = [], None, section is None
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if not inside:
                inside = bool(r) and r[-1].endswith("(%s)" % section) and r[0].startswith("#")
            elif header is None:
                if r and r[0] == first:
                    header = r
            elif not r:
                break
            else:
                out.append(dict(zip(header, r)))
    return out


def mem_name(op):
    for short, long_ in MEM.items():
        op = op.replace("memcpy " + short + "]", "memcpy " + long_ + "]")
    return op


first = "Total (MB)" if kind == "gpumemsizesum" else "Time (%)"
SECTION = {"gpukernsum": "cuda_gpu_kern_sum", "cudaapisum": "cuda_api_sum", "gpumemtimesum": "cuda_gpu_mem_time_sum",
           "gpumemsizesum": "cuda_gpu_mem_size_sum", "nvtxsum": "nvtx_sum"}
theirs, ours = rows(nsys_path, first), rows(nsl_path, first, SECTION[kind])
key_cols = {"gpukernsum": ["Name"], "cudaapisum": ["Name"], "gpumemtimesum": ["Operation"],
            "gpumemsizesum": ["Operation"], "nvtxsum": ["Style", "Range"]}[kind]
count_col = {"cudaapisum": "Num Calls", "gpumemtimesum": "Count", "gpumemsizesum": "Count"}.get(kind, "Instances")
unit = "(MB)" if kind == "gpumemsizesum" else "(ns)"
total_col = "Total " + unit if kind == "gpumemsizesum" else "Total Time (ns)"


def key(r):
    k = tuple(r[c] for c in key_cols)
    return tuple(mem_name(x) for x in k) if kind.startswith("gpumem") else k


merged = {}
for r in theirs:
    m = merged.setdefault(key(r), {"rows": []})
    m["rows"].append(r)
problems = []
mine = {key(r): r for r in ours}
if len(mine) != len(ours):
    problems.append("nsl has %d rows for %d keys" % (len(ours), len(mine)))
for k in sorted(set(merged) | set(mine)):
    if k not in mine:
        problems.append("only nsys has %s" % (k,))
        continue
    if k not in merged:
        problems.append("only nsl has %s" % (k,))
        continue
    rs, n = merged[k]["rows"], mine[k]
    exact = kind != "gpumemsizesum"
    def num(x):
        return int(x) if exact else float(x)
    got = {count_col: int(n[count_col]), total_col: num(n[total_col]), "Min " + unit: num(n["Min " + unit]),
           "Max " + unit: num(n["Max " + unit])}
    want = {count_col: sum(int(r[count_col]) for r in rs), total_col: sum(num(r[total_col]) for r in rs),
            "Min " + unit: min(num(r["Min " + unit]) for r in rs), "Max " + unit: max(num(r["Max " + unit]) for r in rs)}
    if len(rs) == 1:   # one group on both sides: the statistics too, to the digits nsys prints
        for c in ("Avg " + unit, "Med " + unit, "StdDev " + unit):
            got[c], want[c] = float(n[c]), float(rs[0][c])
    for c in want:
        tol = 0 if isinstance(want[c], int) else (0.0005 if kind == "gpumemsizesum" else 0.05) * len(rs) + 1e-9 * abs(want[c])
        if abs(got[c] - want[c]) > tol:
            problems.append("%s %s: nsl %s, nsys %s" % (k, c, got[c], want[c]))
for p in problems[:20]:
    print(p)
if len(problems) > 20:
    print("... %d differences in all" % len(problems))
print("%s: %d nsys rows, %d keys compared, %d differences" % (kind, len(theirs), len(merged), len(problems)))
sys.exit(1 if problems else 0)
