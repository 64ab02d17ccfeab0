-- Wireshark / tshark dissector for linerate RDMA (crates/rdma, seed 001).
--
--   tshark -X lua_script:crates/rdma/wireshark/linerate_rdma.lua -r capture.pcap -Y lrrdma
--
-- Decodes the 48-byte header documented in crates/rdma/src/lib.rs, on UDP port 18791,
-- on EtherType 0x88B5, and (heuristically, by magic and version) on any other UDP port.
-- The CRC32C over header bytes 0..44 and the payload is recomputed: lrrdma.crc.status is
-- "good" or "bad". Written for the Lua 5.2 of Wireshark 4.0 (bit32) and later Luas.

local p = Proto("lrrdma", "linerate RDMA")

local types = { [1] = "RegisterFirst", [2] = "Data", [3] = "Ack", [4] = "Nack", [5] = "Notify" }
local reasons = {
    [0] = "none", [1] = "unknown_key", [2] = "deregistered", [3] = "out_of_bounds",
    [4] = "table_full", [5] = "escape_full", [6] = "too_many_packets", [7] = "malformed",
    [8] = "queue_full",
}

local f = p.fields
f.magic = ProtoField.uint16("lrrdma.magic", "Magic", base.HEX)
f.version = ProtoField.uint8("lrrdma.version", "Version", base.DEC)
f.type = ProtoField.uint8("lrrdma.type", "Type", base.DEC, types)
f.type_name = ProtoField.string("lrrdma.type_name", "Type name")
f.flags = ProtoField.uint8("lrrdma.flags", "Flags", base.HEX)
f.registered = ProtoField.bool("lrrdma.flags.registered", "Registered", 8, nil, 0x01)
f.segment = ProtoField.bool("lrrdma.flags.segment", "Large-transfer segment", 8, nil, 0x02)
f.last = ProtoField.bool("lrrdma.flags.last_segment", "Last segment", 8, nil, 0x04)
f.reason = ProtoField.uint8("lrrdma.reason", "NACK reason", base.DEC, reasons)
f.payload_len = ProtoField.uint16("lrrdma.payload_len", "Payload length", base.DEC)
f.op_id = ProtoField.uint64("lrrdma.op_id", "Op id", base.DEC)
f.write_id = ProtoField.uint64("lrrdma.write_id", "Write id (op id >> 20)", base.DEC)
f.segment_no = ProtoField.uint32("lrrdma.segment_no", "Segment number (op id & 0xfffff)", base.DEC)
f.index = ProtoField.uint32("lrrdma.index", "Packet index", base.DEC)
f.count = ProtoField.uint32("lrrdma.count", "Packet count", base.DEC)
f.key = ProtoField.uint32("lrrdma.key", "Region key", base.HEX)
f.op_len = ProtoField.uint32("lrrdma.op_len", "Op length", base.DEC)
f.offset = ProtoField.uint64("lrrdma.offset", "Op offset in region", base.DEC)
f.stride = ProtoField.uint16("lrrdma.stride", "Stride", base.DEC)
f.span = ProtoField.uint16("lrrdma.span", "ACK span (packets acknowledged from the index on; 0 on other types)", base.DEC)
f.crc = ProtoField.uint32("lrrdma.crc", "CRC32C", base.HEX)
f.crc_status = ProtoField.string("lrrdma.crc.status", "CRC32C status")
f.payload = ProtoField.bytes("lrrdma.payload", "Payload")

-- Bitwise operations for Lua 5.2 (bit32) and 5.3+ (native operators, loaded as text so
-- that a 5.2 parser never sees them).
local band, bxor, rshift
if bit32 then
    band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
else
    band = load("return function(a, b) return a & b end")()
    bxor = load("return function(a, b) return a ~ b end")()
    rshift = load("return function(a, n) return (a & 0xffffffff) >> n end")()
end

-- CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table driven.
local crc_table = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) == 1 then
            c = bxor(rshift(c, 1), 0x82F63B78)
        else
            c = rshift(c, 1)
        end
    end
    crc_table[i] = c
end

local function crc32c(crc, tvbr)
    local ba = tvbr:bytes()
    for i = 0, ba:len() - 1 do
        crc = bxor(crc_table[band(bxor(crc, ba:get_index(i)), 0xff)], rshift(crc, 8))
    end
    return crc
end

local HEADER = 48

local function dissect(tvb, pinfo, tree)
    if tvb:len() < HEADER or tvb(0, 2):uint() ~= 0x4c52 or tvb(2, 1):uint() ~= 2 then
        return 0
    end
    local ty = tvb(3, 1):uint()
    if types[ty] == nil then
        return 0
    end
    local plen = tvb(6, 2):uint()
    local avail = math.min(plen, tvb:len() - HEADER)
    pinfo.cols.protocol = "LR-RDMA"
    local t = tree:add(p, tvb(0, HEADER + avail))
    t:add(f.magic, tvb(0, 2))
    t:add(f.version, tvb(2, 1))
    t:add(f.type, tvb(3, 1))
    t:add(f.type_name, tvb(3, 1), types[ty])
    local ft = t:add(f.flags, tvb(4, 1))
    ft:add(f.registered, tvb(4, 1))
    ft:add(f.segment, tvb(4, 1))
    ft:add(f.last, tvb(4, 1))
    t:add(f.reason, tvb(5, 1))
    t:add(f.payload_len, tvb(6, 2))
    local op = tvb(8, 8):uint64()
    t:add(f.op_id, tvb(8, 8))
    t:add(f.write_id, tvb(8, 8), op:rshift(20))
    t:add(f.segment_no, tvb(8, 8), op:band(UInt64(0xfffff)):tonumber())
    t:add(f.index, tvb(16, 4))
    t:add(f.count, tvb(20, 4))
    t:add(f.key, tvb(24, 4))
    t:add(f.op_len, tvb(28, 4))
    t:add(f.offset, tvb(32, 8))
    t:add(f.stride, tvb(40, 2))
    t:add(f.span, tvb(42, 2))
    t:add(f.crc, tvb(44, 4))
    local status = "bad"
    if avail == plen then
        local c = crc32c(0xffffffff, tvb(0, 44))
        if plen > 0 then
            c = crc32c(c, tvb(HEADER, plen))
        end
        if bxor(c, 0xffffffff) == tvb(44, 4):uint() then
            status = "good"
        end
    end
    t:add(f.crc_status, tvb(44, 4), status)
    if plen > 0 and avail > 0 then
        t:add(f.payload, tvb(HEADER, avail))
    end
    local name = types[ty]
    if ty == 4 then
        name = name .. "(" .. (reasons[tvb(5, 1):uint()] or "?") .. ")"
    end
    pinfo.cols.info = string.format("%s op=%s idx=%d/%d key=0x%08x off=%s len=%d crc=%s", name, tostring(op),
        tvb(16, 4):uint(), tvb(20, 4):uint(), tvb(24, 4):uint(), tostring(tvb(32, 8):uint64()), plen, status)
    return HEADER + avail
end

function p.dissector(tvb, pinfo, tree)
    return dissect(tvb, pinfo, tree)
end

DissectorTable.get("udp.port"):add(18791, p)
DissectorTable.get("ethertype"):add(0x88b5, p)
p:register_heuristic("udp", function(tvb, pinfo, tree)
    return dissect(tvb, pinfo, tree) > 0
end)
