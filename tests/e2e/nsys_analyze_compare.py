#!/usr/bin/env python3
"""nsys_analyze_compare.py NSYS_CSV DIAGNOSE_JSON -- compares the listings of nsys 2022.4's `nsys analyze` rules
(the oracle: NVIDIA's own rule scripts, run with rows=0 so that nothing is cut; their CSV output, one block
per rule after its "Processing [...] with [.../RULE.py]" line) with the evidence tables of the matching checks
of `nsl run diagnose --format json` (its "tables"): the same calls with the same durations.
  cuda-sync-api      api_sync               start, duration, pid, tid, API name (nsys keeps the _v3020 suffix)
  cuda-sync-memcpy   memcpy_sync            GPU duration, pid, device, stream, API name; bytes (MB, 3 decimals)
  cuda-sync-memset   memset_sync            the same
  cuda-async-memcpy  memcpy_pageable_async  the same
  gpu-starv          gpu_gaps               start, duration, pid, device
  gpu-low-util       gpu_low_utilisation    nsl lists the chunks under 50 %; 2022.4 coalesces consecutive ones into one
                     record (weighted in-use %) and rounds the chunk length up to a whole ns, so a record's start
                     and length may exceed nsl's by one ns per chunk before / in it (a record with the last chunk
                     ends where nsl's does: at the end of the profile); in-use % to nsys's 1 decimal
A check whose table is absent listed nothing.  Prints each difference and a summary line per rule; exit 1 when any."""
import csv
import json
import re
import sys

nsys_path, diag_path = sys.argv[1:3]
blocks, rule = {}, None
with open(nsys_path, newline="") as f:
    for r in csv.reader(f):
        if r and r[0].startswith("Processing ["):
            rule = re.search(r"([\w-]+)\.py\]", ",".join(r)).group(1)
            blocks[rule] = []
            header = None
        elif rule and r and not r[0].startswith("SKIPPED"):
            if header is None:
                header = r
            else:
                blocks[rule].append(dict(zip(header, r)))
tables = json.load(open(diag_path))["tables"]
problems = []


def api(name):
    return re.sub(r"_v\d+$", "", name)


def compare(rule, table, theirs, ours):
    """theirs, ours: lists of (key, extra) -- keys compared as multisets, extras pairwise within tolerance."""
    t, o = sorted(theirs), sorted(ours)
    if [k for k, _ in t] != [k for k, _ in o]:
        only_t = sorted(set(k for k, _ in t) - set(k for k, _ in o))[:3]
        only_o = sorted(set(k for k, _ in o) - set(k for k, _ in t))[:3]
        problems.append("%s/%s: %d rows in nsys, %d in nsl; only nsys: %s; only nsl: %s"
                        % (rule, table, len(t), len(o), only_t, only_o))
        return
    for (k, a), (_, b) in zip(t, o):
        for x, y, tol in zip(a, b, (0.0005, 0.0005)):
            if abs(x - y) > tol + 1e-9 * abs(x):
                problems.append("%s/%s %s: nsys %s, nsl %s" % (rule, table, k, x, y))
    print("%s = %s: %d rows agree" % (rule, table, len(t)))


for rule, table in (("cuda-sync-api", "api_sync"), ("cuda-sync-memcpy", "memcpy_sync"),
                    ("cuda-sync-memset", "memset_sync"), ("cuda-async-memcpy", "memcpy_pageable_async"),
                    ("gpu-starv", "gpu_gaps")):
    if rule not in blocks:
        problems.append("nsys ran no %s" % rule)
        continue
    theirs, ours = blocks[rule], tables.get(table, [])
    if rule == "cuda-sync-api":
        t = [((int(r["Start (ns)"]), int(r["Duration (ns)"]), int(r["PID"]), int(r["TID"]), api(r["API Name"])), ())
             for r in theirs]
        o = [((r["start (ns)"], r["blocked (ns)"], r["pid"], r["tid"], r["API call"]), ()) for r in ours]
    elif rule == "gpu-starv":
        t = [((int(r["Start (ns)"]), int(r["Duration (ns)"]), int(r["PID"]), int(r["Device ID"])), ()) for r in theirs]
        o = [((r["start (ns)"], r["gap (ns)"], r["pid"], r["device"]), ()) for r in ours]
    else:
        # one copy is one (GPU start, device, stream): 2022.4 joins a copy to every runtime row of its
        # correlation id, and exports with two rows per call list it twice
        seen = {(r["Start (ns)"], r["Device ID"], r["Stream ID"]): r for r in theirs}
        if len(seen) < len(theirs):
            print("%s: %d rows of nsys list a copy listed already" % (rule, len(theirs) - len(seen)))
        t = [((int(r["Duration (ns)"]), int(r["PID"]), int(r["Device ID"]), int(r["Stream ID"]), api(r["API Name"])),
              (float(r["Bytes (MB)"]),)) for r in seen.values()]
        if rule == "cuda-sync-memcpy":   # 2022.4 leaves out HtoD of 64000 bytes or less and copies within a device
            ours = [r for r in ours if not (r["kind"] == "HtoD" and r["bytes"] <= 64000) and r["kind"] != "DtoD"]
        o = [((r["GPU time (ns)"], r["pid"], r["device"], r["stream"], r["API call"]), (round(r["bytes"] / 1e6, 3),))
             for r in ours]
    compare(rule, table, t, o)

# gpu-low-util: nsl's chunks coalesced as 2022.4 does, then matched record by record
runs = []
for r in sorted(tables.get("gpu_low_utilisation", []), key=lambda r: (r["pid"], r["device"], r["chunk"])):
    last = runs[-1] if runs else None
    if last and (last["pid"], last["device"]) == (r["pid"], r["device"]) and last["chunk"] + 1 == r["chunk"]:
        last.update(chunk=r["chunk"], n=last["n"] + 1, length=last["length"] + r["length (ns)"],
                    busy=last["busy"] + r["busy (ns)"])
    else:
        runs.append(dict(pid=r["pid"], device=r["device"], chunk=r["chunk"], first=r["chunk"], n=1,
                         start=r["start (ns)"], length=r["length (ns)"], busy=r["busy (ns)"]))
theirs = sorted(blocks.get("gpu-low-util", []), key=lambda r: (int(r["PID"]), int(r["Device ID"]), int(r["Start (ns)"])))
runs.sort(key=lambda u: (u["pid"], u["device"], u["start"]))
if len(theirs) != len(runs):
    problems.append("gpu-low-util: %d records in nsys, %d runs of low chunks in nsl" % (len(theirs), len(runs)))
else:
    for a, u in zip(theirs, runs):
        ds, dl = int(a["Start (ns)"]) - u["start"], int(a["Duration (ns)"]) - u["length"]
        if abs(ds + dl) <= u["n"]:   # a run with the last chunk: both end where the profile ends
            dl = 0
        pct = 100.0 * u["busy"] / u["length"] if u["length"] else 0.0
        if ((int(a["PID"]), int(a["Device ID"])) != (u["pid"], u["device"]) or not 0 <= ds <= u["first"]
                or not 0 <= dl <= u["n"] or abs(float(a["In-Use (%)"]) - pct) > 0.05 + 1e-6):
            problems.append("gpu-low-util: nsys %s, nsl run %s (%.4f %%)" % (dict(a), u, pct))
    print("gpu-low-util = gpu_low_utilisation: %d records agree" % len(theirs))
for p in problems[:20]:
    print("DIFF " + p)
sys.exit(1 if problems else 0)
