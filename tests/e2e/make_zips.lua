-- make_zips.lua -- writes hostile and broken zip files for the CLI tests,
-- byte by byte from PKWARE's APPNOTE (string.pack; nothing of nsl's own zip
-- code is used).  Run inside nsl:
--   nsl run tests/e2e/make_zips.lua --arg dir=DIR --arg export=FILE.sqlite
-- Each file is DIR/<case>.zip; DIR/cases.txt lists "<case> <what nsl must say>".

-- CRC-32 (IEEE 802.3, reflected), table-driven.
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if c & 1 == 1 then c = 0xEDB88320 ~ (c >> 1) else c = c >> 1 end
  end
  crc_table[i] = c
end
local function crc32(s)
  local c = 0xFFFFFFFF
  for i = 1, #s do c = crc_table[(c ~ s:byte(i)) & 0xFF] ~ (c >> 8) end
  return c ~ 0xFFFFFFFF
end

-- A zip of entries {name=, data=, mode= (Unix mode), flags=, method=,
-- usize= (declared uncompressed size, default #data)}; stored unless method.
local function zip(entries)
  local out, central = {}, {}
  local offset = 0
  for _, e in ipairs(entries) do
    local data = e.data or ""
    local crc = e.crc or crc32(data)
    local usize = e.usize or #data
    local method = e.method or 0
    local flags = e.flags or 0
    local loc = string.pack("<I4I2I2I2I2I2I4I4I4I2I2", 0x04034b50, 20, flags, method, 0, 0x5821, crc, #data, usize,
                            #e.name, 0) .. e.name .. data
    out[#out + 1] = loc
    central[#central + 1] = string.pack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 0x02014b50, 3 << 8 | 20, 20, flags,
                                        method, 0, 0x5821, crc, #data, usize, #e.name, 0, 0, 0, 0,
                                        (e.mode or 0x81A4) << 16, offset) .. e.name
    offset = offset + #loc
  end
  local cd = table.concat(central)
  return table.concat(out) .. cd .. string.pack("<I4I2I2I2I2I4I4I2", 0x06054b50, 0, 0, #entries, #entries, #cd,
                                                offset, 0)
end

local function manifest(members, extra)
  local list = {}
  for _, m in ipairs(members) do
    list[#list + 1] = string.format('{"path": "%s", "size": %d, "sha256": "%s"}', m.path, m.size,
                                    m.sha256 or string.rep("0", 64))
  end
  return string.format('{"format": "nsl-bundle", "format_version": %d, "members": [%s]%s}', extra and extra.version or 1,
                       table.concat(list, ", "), extra and extra.more or "")
end

local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

return {
  name = "make_zips",
  description = "Writes hostile zip files for the CLI tests",
  needs_trace = false,
  args = {dir = {default = "", required = true, help = "output folder"},
          export = {default = "", required = true, help = "a real export to put inside"}},
  run = function(_, args)
    local f = assert(io.open(args.export, "rb"))
    local export = f:read("a")
    f:close()
    local rep = {name = "reports/x.sqlite", data = export}
    local ok_manifest = manifest({{path = rep.name, size = #export}})
    local cases = {
      {"absolute", "absolute", zip{{name = "/tmp/evil-absolute.txt", data = "x"}}},
      {"dotdot", "component", zip{{name = "../evil-dotdot.txt", data = "x"}}},
      {"dotdot_inner", "component", zip{{name = "reports/../../evil-inner.txt", data = "x"}}},
      {"backslash", "backslash", zip{{name = "..\\evil-backslash.txt", data = "x"}}},
      {"symlink", "link", zip{{name = "reports/x.sqlite", data = "/etc/passwd", mode = 0xA1FF}}},
      {"device", "device", zip{{name = "reports/x.sqlite", data = "", mode = 0x2180}}},
      {"duplicate", "twice", zip{rep, rep}},
      {"encrypted", "encrypted", zip{{name = "reports/x.sqlite", data = "x", flags = 1}}},
      {"bomb", "200", zip{{name = "reports/x.sqlite", data = string.rep("\0", 64), usize = 1 << 30, method = 8,
                            crc = 0}}},
      {"garbage", "zip", "PK\3\4" .. string.rep("not a zip at all ", 40)},
      {"no_manifest", "manifest", zip{rep}},
      {"manifest_not_json", "manifest", zip{rep, {name = "manifest.json", data = "{not json"}}},
      {"future_version", "newer", zip{rep, {name = "manifest.json",
                                                data = manifest({{path = rep.name, size = #export}}, {version = 99})}}},
      {"unlisted_member", "not listed", zip{rep, {name = "meta/extra.txt", data = "hi"},
                                            {name = "manifest.json", data = ok_manifest}}},
      {"missing_member", "does not hold", zip{rep, {name = "manifest.json", data = manifest({{path = rep.name, size = #export},
                                                                                     {path = "meta/gone.txt", size = 2}})}}},
      {"wrong_size", "in manifest.json", zip{rep, {name = "manifest.json", data = manifest({{path = rep.name, size = #export + 1}})}}},
      {"wrong_sha256", "sha256", zip{rep, {name = "manifest.json", data = ok_manifest}}},
      {"bad_crc", "CRC", zip{{name = "reports/x.sqlite", data = export, crc = 12345},
                             {name = "manifest.json", data = ok_manifest}}},
    }
    local full = zip{rep, {name = "manifest.json", data = ok_manifest}}
    cases[#cases + 1] = {"truncated", "truncated", full:sub(1, #full // 2)}
    cases[#cases + 1] = {"trailing_garbage", "end of central directory", full .. "trailing bytes after the end record"}
    local list = {}
    for _, c in ipairs(cases) do
      write(args.dir .. "/" .. c[1] .. ".zip", c[3])
      list[#list + 1] = c[1] .. " " .. c[2]
    end
    write(args.dir .. "/cases.txt", table.concat(list, "\n") .. "\n")
  end,
}
