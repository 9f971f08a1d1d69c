-- nsl.kept -- columns an analysis derives from each report's rows alone,
-- kept in the column cache so that a later run reads them instead of
-- deriving them again (trace:derived, trace:keep_derived).  A kept column
-- lies in a folder others may write: its reader checks the values before it
-- trusts them.  Nothing is kept or read without a cache folder, in a
-- --from/--to/--device run (its rows are not the source's), or by another
-- build.  A name says what is derived and how ("api_row.1"): a new way of
-- deriving it is a new name.
local nsl = require("nsl")

local M = {}

--- The kept parts of column `name` (of type ctype) of table tname: a list
-- with report r's (0-based) at [r + 1], and the table's rows per report;
-- nil when some report keeps none.  rows (a list as trace:report_rows
-- gives): each part's length when it is not one per row of the table.
function M.parts(trace, tname, name, ctype, rows)
  if trace:nreports() == 0 or not trace:keeps_derived(0) then return nil end   -- (no rows counted for nothing)
  rows = rows or trace:report_rows(tname)
  local parts = M.parts_many(trace, {{tname, name, ctype, rows}})[1]
  if parts then return parts, rows end
  return nil
end

--- M.parts of several columns at once, read side by side (trace:derived_many:
-- the checks of their files on every thread): asks is a list of {tname,
-- name, ctype, rows (optional)}; returns a list with M.parts' first result
-- of each (nil where some report keeps none).
function M.parts_many(trace, asks)
  local nr = trace:nreports()
  if nr == 0 or not trace:keeps_derived(0) then return {} end
  local list, first = {}, {}
  for i, a in ipairs(asks) do
    local rows = a[4] or trace:report_rows(a[1])
    first[i] = #list
    for r = 1, nr do list[#list + 1] = {r - 1, a[1], a[2], a[3], rows[r]} end
  end
  local got = trace:derived_many(list)
  local out = {}
  for i = 1, #asks do
    local parts = {}
    for r = 1, nr do
      local c = got[first[i] + r]
      if not c then
        parts = nil
        break
      end
      parts[r] = c
    end
    out[i] = parts
  end
  return out
end

--- The 0-based row of table tname at which each report's rows begin (a
-- list, 1-based by report), and the rows per report (trace:report_rows):
-- what moves a report's own rows to the trace's and back.
function M.first_rows(trace, tname)
  local rows = trace:report_rows(tname)
  local first = {0}
  for r = 2, #rows do first[r] = first[r - 1] + rows[r - 1] end
  return first, rows
end

--- A report's part c of a column of rows of another table (-1 or NULL:
-- none), as kept (the report's own rows, from 0): checked against that
-- table's n rows of the report and moved to the trace's rows by first (the
-- report's first row there, M.first_rows); nil when a row is out of range
-- (a kept file is not to be trusted).  whole: every value must be a row
-- (an order of the rows: no -1, no NULL).
function M.trace_rows(c, n, first, whole)
  local lo, hi = nsl.extent(c)
  if lo and (lo < (whole and 0 or -1) or hi >= n) then return nil end
  if whole and c:isnull():count() > 0 then return nil end
  if first == 0 then return c end
  return whole and c + first or nsl.where(c:ge(0), c + first, c)
end

--- The reverse of M.trace_rows, for keeping: rows c of the trace moved to
-- the report's own by first.
function M.own_rows(c, first) return first == 0 and c or nsl.where(c:ge(0), c - first, c) end

--- Whether columns a and b hold the same values, NULLs in the same rows:
-- what a kept result is read for only where its inputs, kept beside it, are
-- the caller's.
function M.same(a, b)
  if #a ~= #b or a:type() ~= b:type() then return false end
  local na, nb = a:isnull(), b:isnull()
  if (na & ~nb):count() > 0 or (nb & ~na):count() > 0 then return false end
  if a:type() == "i32" then a, b = a:cast("i64"), b:cast("i64") end
  return nsl.coalesce(a, 0):ne(nsl.coalesce(b, 0)):count() == 0
end

--- Each report's time offset (1-based list): what its times are moved by
-- on the trace's clock.  Kept times are on the report's own clock:
-- M.on_clock(c, off) moves a kept column to the trace's, M.on_clock(c, -off)
-- back for keeping.
function M.time_offsets(trace) return trace.reports.time_offset:totable() end
function M.on_clock(c, off) return off == 0 and c or c + off end

--- M.parts of a column of n rows (default 1) per report: a value or a few
-- that each report keeps of its own.
function M.per_report(trace, tname, name, ctype, n)
  local rows = {}
  for r = 1, trace:nreports() do rows[r] = n or 1 end
  return M.parts(trace, tname, name, ctype, rows)
end

--- A bool column of one row holding b: a flag a report keeps.
function M.flag(b) return nsl.rep(b and 1 or 0, 1):eq(1) end

--- A name for kept work that also says which settings it was derived
-- under: prefix, a dot, then a hash (FNV-1a, 16 hex digits) of the
-- settings (numbers, strings, or arrays of strings), so that other
-- settings derive it again.
function M.name(prefix, ...)
  local parts = {}
  for i, v in ipairs{...} do
    parts[i] = type(v) == "table" and table.concat(v, "\1") or type(v) == "string" and v or string.format("%.17g", v)
  end
  local h = 0xcbf29ce484222325
  for c in table.concat(parts, "\2"):gmatch(".") do h = (h ~ c:byte()) * 0x100000001b3 end
  return string.format("%s.%016x", prefix, h)
end

--- Whether some report of trace keeps what it is given (trace:keeps_derived):
-- false where M.keep would keep nothing; second result, per report (1-based).
function M.keeps(trace)
  local keeps, any = {}, false
  for r = 1, trace:nreports() do
    keeps[r] = trace:keeps_derived(r - 1)
    any = any or keeps[r]
  end
  return any, keeps
end

-- The types a kept table's columns may have, by the code its meta column holds.
local TYPES = {"i64", "i32", "f64", "bool"}
local TYPE_CODE = {i64 = 0, i32 = 1, f64 = 2, bool = 3}

--- Whether M.keep_table can keep table t's columns cols (false: nothing to
-- keep, as a table not made): each of a type a kept column may have.
function M.keepable(t, cols)
  if not t then return true end
  local have = t:columns()
  if #have ~= #cols then return false end
  for i, c in ipairs(cols) do
    if have[i] ~= c or not TYPE_CODE[t:coltype(c)] then return false end
  end
  return true
end

--- Keeps t, a table made from the rows of a trace of one report (its
-- columns exactly cols, in that order; false: a table that was not made),
-- under name with table tname's report 0, as M.table reads it: a meta
-- column (rows, or -1 for false; each column's type) and a column each.
-- The caller checks M.keepable first (this keeps nothing it fails).
function M.keep_table(trace, tname, name, t, cols)
  if trace:nreports() ~= 1 or not trace:keeps_derived(0) or not M.keepable(t, cols) then return end
  local meta = {t and #t or -1}
  for i, c in ipairs(cols) do meta[i + 1] = t and TYPE_CODE[t:coltype(c)] or 0 end
  trace:keep_derived(0, tname, name, nsl.column(meta))
  if t then
    for _, c in ipairs(cols) do trace:keep_derived(0, tname, name .. "." .. c, t[c]) end
  end
end

--- The table M.keep_table kept under name (columns cols): a table, false
-- where it was kept as not made, nil where none is kept (another trace than
-- one of one report, nothing kept, a file missing or of another shape).
-- Its values are the keeper's: rows of other tables in it are the caller's
-- to check before it trusts them.
function M.table(trace, tname, name, cols)
  if trace:nreports() ~= 1 or not trace:keeps_derived(0) then return nil end
  local meta = trace:derived(0, tname, name, "i64", #cols + 1)
  if not meta then return nil end
  local rows = meta[1]
  if rows == nil or rows < -1 then return nil end
  if rows == -1 then return false end
  local list = {}
  for i, c in ipairs(cols) do
    local ctype = TYPES[(meta[i + 1] or -1) + 1]
    local col = ctype and trace:derived(0, tname, name .. "." .. c, ctype, rows)
    if not col then return nil end
    list[i] = {c, col}
  end
  return nsl.table(list)
end

--- Keeps col, a column of table tname's rows (every report's, in report
-- order), as each report's part under `name`; of_report(c, r), when given,
-- makes report r's (1-based) part c into what is kept.  A report that keeps
-- nothing (trace:keeps_derived) gets no part cut.
function M.keep(trace, tname, name, col, of_report)
  local nr = trace:nreports()
  local any, keeps = M.keeps(trace)
  if not any then return end
  local rows, at = trace:report_rows(tname), 0
  for r = 1, nr do
    if keeps[r] then
      local c = nr == 1 and col or col:gather(nsl.range(rows[r]) + at)
      if of_report then c = of_report(c, r) end
      trace:keep_derived(r - 1, tname, name, c)
    end
    at = at + rows[r]
  end
end

return M
