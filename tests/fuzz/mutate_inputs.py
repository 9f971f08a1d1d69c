#!/usr/bin/env python3
"""mutate_inputs.py -- hunts internal errors on mutated inputs (not a ctest; the fuzzing harnesses
fuzz_analyses_* keep the class found once it is fixed).

  mutate_inputs.py NSL EXPORT... [--csv] [--analyses diagnose,classes,summary] [--work DIR]

For every table and column of each SQLite export: a copy with the column dropped, its values retyped (text,
real, blob), set NULL, and (integer columns) set out of range (-1, 2^31, +-2^62, +-(2^63 - 1): times that far
apart wrap around in a span's arithmetic); each copy is run through the analyses (--analyses: every shipped one
that takes one trace finds more than the three the fuzzing harnesses run).  With --csv, the `nsys stats` CSV files tests/e2e/make_stats_csv.sh makes from each export are
mutated instead (a column dropped, a header renamed, cells emptied, cells made text, rows cut short, rows
doubled).  A run that ends in "internal error", a Lua traceback, a signal or a sanitizer report is printed
with its mutation; exit 1 when any did.  The inputs are never written: every mutation is on a copy."""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

BAD = ("internal error", "stack traceback", "this is a bug", "AddressSanitizer", "runtime error:", "LeakSanitizer")


def run(nsl, analysis, path, env):
    p = subprocess.run([nsl, "run", analysis, path, "--no-cache"], capture_output=True, text=True,
                       errors="replace", env=env, timeout=120)
    out = p.stdout + p.stderr
    if p.returncode < 0 or p.returncode >= 128 or any(b in out for b in BAD):
        return "exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or [""])[0][:300])
    return None


def export_mutations(db):
    con = sqlite3.connect(db)
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for t in tables:
        if t.startswith("ENUM_") or t.startswith("sqlite_"):
            continue
        cols = con.execute('PRAGMA table_info("%s")' % t).fetchall()
        if not con.execute('SELECT 1 FROM "%s" LIMIT 1' % t).fetchone():
            continue
        for c in cols:
            name, ctype = c[1], (c[2] or "").upper()
            yield t, name, "drop", 'ALTER TABLE "%s" DROP COLUMN "%s"' % (t, name)
            yield t, name, "null", 'UPDATE "%s" SET "%s" = NULL' % (t, name)
            yield t, name, "text", 'UPDATE "%s" SET "%s" = \'x\' || rowid' % (t, name)
            yield t, name, "real", 'UPDATE "%s" SET "%s" = 1.5' % (t, name)
            yield t, name, "blob", 'UPDATE "%s" SET "%s" = X\'00ff\'' % (t, name)
            if "INT" in ctype:
                for v in (-1, 2 ** 31, 2 ** 62, -2 ** 62, 2 ** 63 - 1, -2 ** 63 + 1):
                    yield t, name, "int %d" % v, 'UPDATE "%s" SET "%s" = %d' % (t, name, v)
    con.close()


def csv_mutations(text):
    lines = text.split("\n")
    header = lines[0].split(",")
    for k in range(len(header)):
        yield "drop column %d" % k, "\n".join(",".join(f for i, f in enumerate(l.split(",")) if i != k)
                                              for l in lines)
        yield "rename header %d" % k, "\n".join([",".join(h if i != k else "X" for i, h in enumerate(header))] +
                                                lines[1:])
        yield "empty column %d" % k, "\n".join([lines[0]] + [",".join(f if i != k else "" for i, f in
                                                                      enumerate(l.split(","))) for l in lines[1:]])
        yield "text column %d" % k, "\n".join([lines[0]] + [",".join(f if i != k else "abc" for i, f in
                                                                         enumerate(l.split(","))) for l in lines[1:]])
        yield "huge column %d" % k, "\n".join([lines[0]] + [",".join(f if i != k else "1e308" for i, f in
                                                                         enumerate(l.split(","))) for l in lines[1:]])
        yield "negative column %d" % k, "\n".join([lines[0]] + [",".join(f if i != k else "-5" for i, f in
                                                                             enumerate(l.split(","))) for l in lines[1:]])
    yield "short rows", "\n".join([lines[0]] + [",".join(l.split(",")[:2]) for l in lines[1:]])
    yield "doubled rows", "\n".join(lines + lines[1:])
    yield "header only", lines[0] + "\n"


def main():
    args = sys.argv[1:]
    nsl = os.path.abspath(args.pop(0))
    analyses = ["diagnose", "classes", "summary"]
    csv = "--csv" in args
    work = None
    if "--analyses" in args:
        i = args.index("--analyses")
        analyses = args[i + 1].split(",")
        del args[i:i + 2]
    if "--work" in args:
        i = args.index("--work")
        work = args[i + 1]
        del args[i:i + 2]
    args = [a for a in args if a != "--csv"]
    tmp = tempfile.mkdtemp(dir=work)
    env = dict(os.environ, NSL_NO_CACHE="1")
    here = os.path.dirname(os.path.abspath(__file__))
    runs = found = 0
    try:
        for export in args:
            if not csv:
                for t, col, what, sql in export_mutations(export):
                    db = os.path.join(tmp, "m.sqlite")
                    shutil.copyfile(export, db)
                    os.chmod(db, 0o600)
                    con = sqlite3.connect(db)
                    try:
                        con.execute(sql)
                        con.commit()
                    except sqlite3.Error:
                        con.close()
                        continue
                    con.close()
                    for a in analyses:
                        runs += 1
                        bad = run(nsl, a, db, env)
                        if bad:
                            found += 1
                            print("%s: %s.%s %s: %s: %s" % (os.path.basename(export), t, col, what, a, bad), flush=True)
            else:
                d = os.path.join(tmp, "csv")
                os.makedirs(d, exist_ok=True)
                made = subprocess.run(["bash", os.path.join(here, "..", "e2e", "make_stats_csv.sh"), export, d + "/r"],
                                      capture_output=True)
                if made.returncode != 0:
                    print("%s: make_stats_csv.sh failed, skipped" % os.path.basename(export), flush=True)
                    continue
                files = sorted(os.listdir(d))
                for f in files:
                    text = open(os.path.join(d, f)).read()
                    for what, mutated in csv_mutations(text):
                        m = os.path.join(tmp, "m")
                        shutil.rmtree(m, ignore_errors=True)
                        os.makedirs(m)
                        open(os.path.join(m, f), "w").write(mutated)
                        for a in analyses:
                            runs += 1
                            bad = run(nsl, a, os.path.join(m, f), env)
                            if bad:
                                found += 1
                                print("%s: %s %s: %s: %s" % (os.path.basename(export), f, what, a, bad), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d runs, %d internal errors" % (runs, found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
