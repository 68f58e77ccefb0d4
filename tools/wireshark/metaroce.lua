-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
--
-- Wireshark dissector for the MetaRoCE transport (metaroce.ko), wire
-- versions 1 and 2, written from Documentation/protocol.rst (section 6,
-- the normative packet formats) and include/metaroce/mr_wire.h.
--
--   tshark -X lua_script:tools/wireshark/metaroce.lua -r capture.pcap
--   make install puts it in Wireshark's global Lua plugin directory.
--
-- A MetaRoCE packet is the payload of a UDP datagram to the module's port
-- (udp_port, default 4797; the "UDP port" preference here). The dissector
-- shows every header (base, RC, RETH, SSN, atomic, original value, IMM or
-- INV, SYN words, ACK with its path and QP blocks, ACK_REQ, RESET, UD) and
-- applies the receiver's stateless validation (protocol.rst, section 6.12)
-- in the receiver's order: a packet a receiver would drop gets an error in
-- the Malformed group and the drop reason under metaroce.drop_reason, named
-- as the module names it. The decode test (tools/wireshark/test-dissector.sh,
-- run by make check-core) checks both against the real encoder and decoder.
--
-- Written for Wireshark 3.6 and later with Lua 5.1 to 5.4: no bit
-- operators, only arithmetic on values below 2^53.

local metaroce = Proto("metaroce", "MetaRoCE transport")

local DEFAULT_PORT = 4797

local OP = {
	WRITE = 0x01, SEND = 0x02, READ_REQ = 0x03, READ_RESP = 0x04,
	CMP_SWAP = 0x05, FETCH_ADD = 0x06, ATOMIC_RESP = 0x07, NOP = 0x08,
	PROBE = 0x09, ACK = 0x10, ACK_REQ = 0x11, RESET = 0x12,
	UD_SEND = 0x20,
}

local op_names = {}
for name, v in pairs(OP) do
	op_names[v] = name
end

local F_SYN, F_ACKREQ, F_RETX, F_IMM, F_INV, F_SOLICIT =
	0x0001, 0x0002, 0x0004, 0x0008, 0x0010, 0x0020
local F_SEQ = F_SYN + F_ACKREQ + F_RETX

local qp_status_names = {
	[0] = "OK", [1] = "RNR", [2] = "REM_ACCESS", [3] = "INV_REQ",
	[4] = "REM_OP",
}

local MAX_PATHS, ACK_MAX_QP, MAX_PAYLOAD = 16, 16, 4096
local QPN_MASK = 0xffffff
local MAX_MSG_LEN = 0x80000000

-- Fields. The names follow protocol.rst's diagrams.
local f = {
	version = ProtoField.uint8("metaroce.version", "Version", base.DEC),
	opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.HEX,
		op_names),
	flags = ProtoField.uint16("metaroce.flags", "Flags", base.HEX),
	flag_syn = ProtoField.bool("metaroce.flags.syn", "SYN", 16, nil,
		F_SYN),
	flag_ackreq = ProtoField.bool("metaroce.flags.ackreq", "ACKREQ", 16,
		nil, F_ACKREQ),
	flag_retx = ProtoField.bool("metaroce.flags.retx", "RETX", 16, nil,
		F_RETX),
	flag_imm = ProtoField.bool("metaroce.flags.imm", "IMM", 16, nil,
		F_IMM),
	flag_inv = ProtoField.bool("metaroce.flags.inv", "INV", 16, nil,
		F_INV),
	flag_solicit = ProtoField.bool("metaroce.flags.solicit", "SOLICIT", 16,
		nil, F_SOLICIT),
	flag_rsvd = ProtoField.uint16("metaroce.flags.reserved", "Reserved",
		base.HEX, nil, 0xffc0),
	epoch = ProtoField.uint32("metaroce.epoch", "Epoch", base.HEX),
	psn = ProtoField.uint32("metaroce.psn", "PSN", base.DEC),
	path = ProtoField.uint8("metaroce.path", "Path", base.DEC),
	hlen = ProtoField.uint8("metaroce.hlen", "HLen (words)", base.DEC),
	plen = ProtoField.uint16("metaroce.plen", "PLen", base.DEC),
	tsval = ProtoField.uint32("metaroce.tsval", "TSval", base.DEC),

	-- RC header; the QPNs also in ACK_REQ and UD_SEND
	dst_qpn = ProtoField.uint32("metaroce.dst_qpn", "Destination QPN",
		base.HEX, nil, 0x00ffffff),
	src_qpn = ProtoField.uint32("metaroce.src_qpn", "Source QPN",
		base.HEX, nil, 0x00ffffff),
	qpn_rsvd = ProtoField.uint32("metaroce.qpn_reserved",
		"Reserved (QPN top byte)", base.HEX, nil, 0xff000000),
	dsn = ProtoField.uint32("metaroce.dsn", "DSN", base.DEC),
	gen = ProtoField.uint8("metaroce.gen", "Gen", base.DEC),
	msn = ProtoField.uint24("metaroce.msn", "MSN", base.DEC),
	msg_len = ProtoField.uint32("metaroce.msg_len", "Message Length",
		base.DEC),
	offset = ProtoField.uint32("metaroce.offset", "Offset", base.DEC),

	-- RETH, SSN, atomic extended header, original value
	raddr = ProtoField.uint64("metaroce.reth.raddr", "Remote Address",
		base.HEX),
	rkey = ProtoField.uint32("metaroce.reth.rkey", "Rkey", base.HEX),
	reth_ssn = ProtoField.uint32("metaroce.reth.ssn",
		"SSN (WRITE with IMM) or 0", base.DEC),
	ssn = ProtoField.uint32("metaroce.ssn", "SSN", base.DEC),
	swap_add = ProtoField.uint64("metaroce.atomic.swap_add", "Swap or Add",
		base.HEX),
	compare = ProtoField.uint64("metaroce.atomic.compare", "Compare",
		base.HEX),
	orig = ProtoField.uint64("metaroce.atomic.orig", "Original Value",
		base.HEX),

	-- optional words
	imm = ProtoField.uint32("metaroce.imm", "Immediate Data", base.HEX),
	inv_rkey = ProtoField.uint32("metaroce.inv_rkey", "Rkey to Invalidate",
		base.HEX),
	syn_dsn = ProtoField.uint32("metaroce.syn.dsn", "SYN DSN", base.DEC),
	syn_echo = ProtoField.uint32("metaroce.syn.echo", "SYN Echo",
		base.HEX),
	syn_cookie = ProtoField.uint64("metaroce.syn.cookie", "SYN Cookie",
		base.HEX),

	-- ACK
	ack_epoch = ProtoField.uint32("metaroce.ack.epoch", "ACK Epoch",
		base.HEX),
	dsn_cum = ProtoField.uint32("metaroce.ack.dsn_cum", "DSN Cumulative",
		base.DEC),
	rate_hint = ProtoField.uint32("metaroce.ack.rate_hint",
		"Rate Hint (Mbit/s)", base.DEC),
	npath = ProtoField.uint8("metaroce.ack.npath", "NPath", base.DEC),
	nqp = ProtoField.uint8("metaroce.ack.nqp", "NQP", base.DEC),
	path_id = ProtoField.uint8("metaroce.ack.path.id", "Path", base.DEC),
	ce_cnt = ProtoField.uint16("metaroce.ack.path.ce_cnt", "CE Count",
		base.DEC),
	rx_cnt = ProtoField.uint16("metaroce.ack.path.rx_cnt", "RX Count",
		base.DEC),
	path_base = ProtoField.uint32("metaroce.ack.path.base", "Base",
		base.DEC),
	tsecr = ProtoField.uint32("metaroce.ack.path.tsecr", "TSecr",
		base.DEC),
	bitmap = ProtoField.uint32("metaroce.ack.path.bitmap", "Bitmap word",
		base.HEX),
	sacked = ProtoField.uint16("metaroce.ack.path.sacked",
		"PSNs received beyond Base", base.DEC),
	qp_status = ProtoField.uint8("metaroce.ack.qp.status", "Status",
		base.DEC, qp_status_names),
	qp_qpn = ProtoField.uint24("metaroce.ack.qp.qpn", "QPN", base.HEX),
	qp_gen = ProtoField.uint8("metaroce.ack.qp.gen", "Gen", base.DEC),
	qp_msn = ProtoField.uint24("metaroce.ack.qp.msn", "MSN", base.DEC),
	qp_aux = ProtoField.uint32("metaroce.ack.qp.aux", "Aux", base.DEC),

	-- RESET, UD
	unknown_epoch = ProtoField.uint32("metaroce.reset.unknown_epoch",
		"Unknown Epoch", base.HEX),
	reset_cookie = ProtoField.uint64("metaroce.reset.cookie", "Cookie",
		base.HEX),
	qkey = ProtoField.uint32("metaroce.ud.qkey", "Q_Key", base.HEX),

	reserved = ProtoField.bytes("metaroce.reserved", "Reserved"),
	payload = ProtoField.bytes("metaroce.payload", "Payload"),
	drop_reason = ProtoField.string("metaroce.drop_reason",
		"A receiver drops it"),
}

local field_list = {}
for _, v in pairs(f) do
	field_list[#field_list + 1] = v
end
metaroce.fields = field_list

local ef_malformed = ProtoExpert.new("metaroce.malformed",
	"Malformed MetaRoCE packet", expert.group.MALFORMED,
	expert.severity.ERROR)
local ef_version = ProtoExpert.new("metaroce.version.unknown",
	"Unknown MetaRoCE version", expert.group.UNDECODED,
	expert.severity.WARN)
local ef_retx = ProtoExpert.new("metaroce.retransmission",
	"Retransmission", expert.group.SEQUENCE, expert.severity.NOTE)
metaroce.experts = { ef_malformed, ef_version, ef_retx }

metaroce.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
	"UDP destination port of MetaRoCE (metaroce.ko's udp_port parameter)")

-- Arithmetic helpers (no bit library).
local function has(flags, bit)
	return math.floor(flags / bit) % 2 == 1
end

local function popcount32(v)
	local n = 0
	while v > 0 do
		n = n + v % 2
		v = math.floor(v / 2)
	end
	return n
end

local function sequenced(op)
	return op >= OP.WRITE and op <= OP.PROBE
end

local function has_dsn(op)
	return op >= OP.WRITE and op <= OP.NOP
end

local function has_payload(op)
	return op == OP.WRITE or op == OP.SEND or op == OP.READ_RESP or
		op == OP.UD_SEND
end

local function flags_allowed(op)
	if op == OP.WRITE then
		return F_SEQ + F_IMM + F_SOLICIT
	elseif op == OP.SEND then
		return F_SEQ + F_IMM + F_INV + F_SOLICIT
	elseif op >= OP.READ_REQ and op <= OP.NOP then
		return F_SEQ
	elseif op == OP.PROBE then
		return F_SYN + F_ACKREQ
	elseif op == OP.UD_SEND then
		return F_IMM + F_SOLICIT
	end
	return 0
end

-- Flags outside @allowed (a mask made of whole bits).
local function flags_outside(flags, allowed)
	local bit = 1
	while bit <= 0x8000 do
		if has(flags, bit) and not has(allowed, bit) then
			return true
		end
		bit = bit * 2
	end
	return false
end

-- Per-version lengths: version 1's SYN words are SYN DSN and SYN Echo
-- (8 bytes) and its RESET body the Unknown Epoch (4); version 2 has a
-- 64-bit SYN Cookie (12) and a RESET Cookie (12).
local function syn_len(ver)
	return ver == 1 and 8 or 12
end

local function reset_len(ver)
	return ver == 1 and 4 or 12
end

local function fixed_hlen(op, ver)
	if op == OP.WRITE or op == OP.READ_REQ then
		return 60
	elseif op == OP.SEND then
		return 48
	elseif op == OP.READ_RESP or op == OP.NOP then
		return 44
	elseif op == OP.CMP_SWAP or op == OP.FETCH_ADD then
		return 76
	elseif op == OP.ATOMIC_RESP then
		return 52
	elseif op == OP.PROBE then
		return 20
	elseif op == OP.ACK then
		return 36
	elseif op == OP.ACK_REQ then
		return 28
	elseif op == OP.RESET then
		return 20 + reset_len(ver)
	elseif op == OP.UD_SEND then
		return 36
	end
	return 0
end

local function wire_hlen(op, flags, ver)
	local len = fixed_hlen(op, ver)

	if len == 0 then
		return 0
	end
	if has(flags, F_IMM) or has(flags, F_INV) then
		len = len + 4
	end
	if has(flags, F_SYN) then
		len = len + syn_len(ver)
	end
	return len
end

local function flag_string(flags)
	local s = {}
	local names = { { F_SYN, "SYN" }, { F_ACKREQ, "ACKREQ" },
		{ F_RETX, "RETX" }, { F_IMM, "IMM" }, { F_INV, "INV" },
		{ F_SOLICIT, "SOLICIT" } }
	for _, n in ipairs(names) do
		if has(flags, n[1]) then
			s[#s + 1] = n[2]
		end
	end
	return table.concat(s, ",")
end

local function is_zero(range)
	for i = 0, range:len() - 1 do
		if range(i, 1):uint() ~= 0 then
			return false
		end
	end
	return true
end

-- The first drop reason wins, as in the receiver (protocol.rst 6.12).
local Check = {}
Check.__index = Check

local function new_check(tree)
	return setmetatable({ tree = tree, reason = nil }, Check)
end

function Check:fail(reason, text, item)
	local t = item or self.tree
	t:add_proto_expert_info(ef_malformed, reason .. ": " .. text)
	if not self.reason then
		self.reason = reason
	end
end

-- Adds the 24-bit QPN in the 32-bit word at @r, with its reserved top byte.
local function add_qpn(tree, field, r)
	local item = tree:add(field, r)
	if r(0, 1):uint() ~= 0 then
		tree:add(f.qpn_rsvd, r)
	end
	return item, r:uint()
end

local function add_u64(tree, field, r)
	return tree:add(field, r), r:uint64()
end

local function u64_is_zero(v)
	return v == UInt64(0, 0)
end

-- ACK header and blocks at @off (20); @avail bytes from there. Returns the
-- header length the blocks imply, or nil when they could not be walked.
local function dissect_ack(buf, tree, ck, off, avail)
	local h = tree:add(metaroce, buf(off, math.min(avail, 16)), "ACK header")
	local npath = buf(off + 12, 1):uint()
	local nqp = buf(off + 13, 1):uint()

	h:add(f.ack_epoch, buf(off, 4))
	h:add(f.dsn_cum, buf(off + 4, 4))
	h:add(f.rate_hint, buf(off + 8, 4))
	h:add(f.npath, buf(off + 12, 1))
	h:add(f.nqp, buf(off + 13, 1))
	h:add(f.reserved, buf(off + 14, 2))
	if npath > MAX_PATHS or nqp > ACK_MAX_QP then
		ck:fail("bad_ack", "NPath " .. npath .. ", NQP " .. nqp ..
			" (at most 16 each)", h)
		return nil
	end
	if buf(off + 14, 2):uint() ~= 0 then
		ck:fail("bad_ack", "reserved bits set in the ACK header", h)
		return nil
	end
	local need = 16 + 48 * npath + 12 * nqp
	if avail < need then
		ck:fail("truncated", "datagram shorter than the ACK's " ..
			npath .. " path and " .. nqp .. " QP blocks", h)
		return nil
	end
	local hlen = 20 + need
	if buf(off, 4):uint() == 0 then
		ck:fail("bad_ack", "ACK Epoch 0", h)
		return hlen
	end

	local p = off + 16
	local seen = {}
	for _ = 1, npath do
		local id = buf(p, 1):uint()
		local base_psn = buf(p + 8, 4):uint()
		local pt = tree:add(metaroce, buf(p, 48),
			string.format("Path block: path %d, base %d", id, base_psn))
		pt:add(f.path_id, buf(p, 1))
		pt:add(f.reserved, buf(p + 1, 1))
		pt:add(f.ce_cnt, buf(p + 2, 2))
		pt:add(f.rx_cnt, buf(p + 4, 2))
		pt:add(f.reserved, buf(p + 6, 2))
		pt:add(f.path_base, buf(p + 8, 4))
		pt:add(f.tsecr, buf(p + 12, 4))
		local n = 0
		for w = 0, 7 do
			local r = buf(p + 16 + 4 * w, 4)
			pt:add(f.bitmap, r):append_text(string.format(
				" (PSN base+%d .. base+%d)", 32 * w, 32 * w + 31))
			n = n + popcount32(r:uint())
		end
		pt:add(f.sacked, n):set_generated()
		if not ck.reason then
			if id >= MAX_PATHS or seen[id] then
				ck:fail("bad_ack", "path block for path " .. id ..
					(seen[id] and " again" or ""), pt)
			elseif buf(p + 1, 1):uint() ~= 0 or
			    buf(p + 6, 2):uint() ~= 0 then
				ck:fail("bad_ack", "reserved bits set in a path block",
					pt)
			end
		end
		seen[id] = true
		p = p + 48
	end
	for _ = 1, nqp do
		local status = buf(p, 1):uint()
		local qpn = buf(p + 1, 3):uint()
		local aux = buf(p + 8, 4):uint()
		local qt = tree:add(metaroce, buf(p, 12),
			string.format("QP block: QPN 0x%06x %s, MSN %d", qpn,
				qp_status_names[status] or tostring(status),
				buf(p + 5, 3):uint()))
		qt:add(f.qp_status, buf(p, 1))
		qt:add(f.qp_qpn, buf(p + 1, 3))
		qt:add(f.qp_gen, buf(p + 4, 1))
		qt:add(f.qp_msn, buf(p + 5, 3))
		qt:add(f.qp_aux, buf(p + 8, 4))
		if not ck.reason then
			if status > 4 then
				ck:fail("bad_ack", "QP block status " .. status, qt)
			elseif qpn < 2 then
				ck:fail("bad_ack", "QP block for QPN " .. qpn, qt)
			elseif (status == 1 and aux > 31) or
			    (status ~= 1 and aux ~= 0) then
				ck:fail("bad_ack", "QP block Aux " .. aux ..
					" with status " .. status, qt)
			end
		end
		p = p + 12
	end
	return hlen
end

-- RC header and its extensions at offset 20 (the packet is long enough).
-- Returns the offset after them.
local function dissect_rc(buf, tree, ck, op, flags, plen, info)
	local off = 20
	local rc = tree:add(metaroce, buf(off, 24), "RC header")
	local _, dst = add_qpn(rc, f.dst_qpn, buf(off, 4))
	local _, src = add_qpn(rc, f.src_qpn, buf(off + 4, 4))
	rc:add(f.dsn, buf(off + 8, 4))
	rc:add(f.gen, buf(off + 12, 1))
	rc:add(f.msn, buf(off + 13, 3))
	rc:add(f.msg_len, buf(off + 16, 4))
	rc:add(f.offset, buf(off + 20, 4))
	local dsn = buf(off + 8, 4):uint()
	local gen = buf(off + 12, 1):uint()
	local msn = buf(off + 13, 3):uint()
	local msg_len = buf(off + 16, 4):uint()
	local moff = buf(off + 20, 4):uint()
	off = off + 24
	info[#info + 1] = string.format("dsn=%d", dsn)
	if op ~= OP.NOP then
		info[#info + 1] = string.format("qp=0x%x>0x%x msn=%d", src, dst,
			msn)
	end

	local raddr
	if op == OP.WRITE or op == OP.READ_REQ or op == OP.CMP_SWAP or
	    op == OP.FETCH_ADD then
		local reth = tree:add(metaroce, buf(off, 16), "RETH")
		_, raddr = add_u64(reth, f.raddr, buf(off, 8))
		reth:add(f.rkey, buf(off + 8, 4))
		local item = reth:add(f.reth_ssn, buf(off + 12, 4))
		if not (op == OP.WRITE and has(flags, F_IMM)) and
		    buf(off + 12, 4):uint() ~= 0 and not ck.reason then
			ck:fail("bad_field", "RETH SSN word set on " ..
				op_names[op] .. " without IMM", item)
		end
		off = off + 16
		if op == OP.CMP_SWAP or op == OP.FETCH_ADD then
			local at = tree:add(metaroce, buf(off, 16),
				"Atomic extended header")
			at:add(f.swap_add, buf(off, 8))
			at:add(f.compare, buf(off + 8, 8))
			off = off + 16
		end
	elseif op == OP.SEND then
		tree:add(f.ssn, buf(off, 4))
		off = off + 4
	elseif op == OP.ATOMIC_RESP then
		tree:add(f.orig, buf(off, 8))
		off = off + 8
	end

	-- mr_check_rc()
	if ck.reason then
		return off
	end
	if dst > QPN_MASK or src > QPN_MASK then
		ck:fail("bad_qpn", "a QPN's reserved top byte is set", rc)
	elseif op == OP.NOP then
		if dst ~= 0 or src ~= 0 or msn ~= 0 or gen ~= 0 or
		    msg_len ~= 0 or moff ~= 0 then
			ck:fail("bad_field", "NOP with an RC field other than DSN set",
				rc)
		end
	elseif dst < 2 or src < 2 then
		ck:fail("bad_qpn", "QPN below 2 on an RC packet", rc)
	elseif msg_len > MAX_MSG_LEN then
		ck:fail("bad_length", "Message Length above 2^31", rc)
	elseif op == OP.WRITE or op == OP.SEND or op == OP.READ_RESP then
		if moff + plen > msg_len then
			ck:fail("bad_length", "Offset + PLen beyond Message Length",
				rc)
		elseif plen == 0 and (msg_len ~= 0 or moff ~= 0) then
			ck:fail("bad_length",
				"empty segment of a non-empty message", rc)
		end
	elseif op == OP.READ_REQ then
		if moff ~= 0 then
			ck:fail("bad_length", "READ request with an Offset", rc)
		end
	elseif op == OP.CMP_SWAP or op == OP.FETCH_ADD or
	    op == OP.ATOMIC_RESP then
		if op ~= OP.ATOMIC_RESP and
		    buf(44 + 4, 4):uint() % 8 ~= 0 then
			ck:fail("bad_field", "atomic Remote Address not 8-byte aligned",
				rc)
		elseif msg_len ~= 8 or moff ~= 0 then
			ck:fail("bad_length",
				"atomic with Message Length not 8 or an Offset", rc)
		end
	end
	return off
end

function metaroce.dissector(buf, pinfo, root)
	local len = buf:len()
	pinfo.cols.protocol = "MetaRoCE"
	local tree = root:add(metaroce, buf())
	local ck = new_check(tree)

	local function finish(summary)
		if ck.reason then
			tree:add(f.drop_reason, ck.reason):set_generated()
			summary = summary .. " [malformed: " .. ck.reason .. "]"
		end
		pinfo.cols.info = summary
		tree:append_text(", " .. summary)
		return len
	end

	if len < 20 then
		ck:fail("truncated", "shorter than the 20-byte base header")
		return finish("truncated")
	end

	local ver = buf(0, 1):uint()
	local op = buf(1, 1):uint()
	local flags = buf(2, 2):uint()
	local epoch = buf(4, 4):uint()
	local psn = buf(8, 4):uint()
	local path = buf(12, 1):uint()
	local hlen_words = buf(13, 1):uint()
	local hlen = 4 * hlen_words
	local plen = buf(14, 2):uint()

	local bh = tree:add(metaroce, buf(0, 20), "Base header")
	bh:add(f.version, buf(0, 1))
	bh:add(f.opcode, buf(1, 1))
	local ft = bh:add(f.flags, buf(2, 2))
	if flags ~= 0 then
		ft:append_text(" (" .. flag_string(flags) .. ")")
	end
	ft:add(f.flag_syn, buf(2, 2))
	ft:add(f.flag_ackreq, buf(2, 2))
	ft:add(f.flag_retx, buf(2, 2))
	ft:add(f.flag_imm, buf(2, 2))
	ft:add(f.flag_inv, buf(2, 2))
	ft:add(f.flag_solicit, buf(2, 2))
	ft:add(f.flag_rsvd, buf(2, 2))
	bh:add(f.epoch, buf(4, 4))
	bh:add(f.psn, buf(8, 4))
	bh:add(f.path, buf(12, 1))
	bh:add(f.hlen, buf(13, 1)):append_text(" (" .. hlen .. " bytes)")
	bh:add(f.plen, buf(14, 2))
	bh:add(f.tsval, buf(16, 4))

	local name = op_names[op] or string.format("opcode 0x%02x", op)
	local info = { name }
	if flags ~= 0 then
		info[1] = name .. " [" .. flag_string(flags) .. "]"
	end
	if sequenced(op) then
		info[#info + 1] = string.format("path=%d psn=%d", path, psn)
	end
	if has(flags, F_RETX) then
		bh:add_proto_expert_info(ef_retx)
	end

	if ver ~= 1 and ver ~= 2 then
		bh:add_proto_expert_info(ef_version, "version " .. ver ..
			" is not dissected (1 and 2 are)")
		ck:fail("bad_version", "version " .. ver)
		return finish("version " .. ver)
	end

	-- Section 6.12, steps 3 to 10.
	local expect = wire_hlen(op, flags, ver)
	if expect == 0 then
		ck:fail("bad_opcode", string.format("opcode 0x%02x", op), bh)
		return finish(table.concat(info, " "))
	end
	if flags_outside(flags, flags_allowed(op)) then
		ck:fail("bad_flags", "flag not allowed on " .. name, ft)
	elseif has(flags, F_IMM) and has(flags, F_INV) then
		ck:fail("bad_flags", "IMM and INV together", ft)
	elseif epoch == 0 then
		ck:fail("bad_field", "Epoch 0", bh)
	elseif sequenced(op) and path >= MAX_PATHS then
		ck:fail("bad_field", "Path " .. path .. " (at most 15)", bh)
	elseif not sequenced(op) and (psn ~= 0 or path ~= 0) then
		ck:fail("bad_field", "PSN or Path set on an unsequenced opcode",
			bh)
	elseif not has_payload(op) and plen ~= 0 then
		ck:fail("bad_plen", "PLen " .. plen .. " on " .. name, bh)
	elseif plen > MAX_PAYLOAD then
		ck:fail("bad_plen", "PLen " .. plen .. " above 4096", bh)
	end

	if op == OP.ACK then
		if len < 36 then
			if not ck.reason then
				ck:fail("truncated", "ACK shorter than 36 bytes")
			end
			return finish(table.concat(info, " "))
		end
		local ack_hlen = dissect_ack(buf, tree, ck, 20, len - 20)
		if ack_hlen then
			expect = ack_hlen
		end
		if not ck.reason and hlen ~= expect then
			ck:fail("bad_hlen", "HLen " .. hlen .. " bytes, the blocks " ..
				"make " .. expect, bh)
		end
		if not ck.reason and len ~= hlen + plen then
			ck:fail("bad_plen", "datagram of " .. len .. " bytes", bh)
		end
		info[#info + 1] = string.format("ack_epoch=0x%08x dsn_cum=%d " ..
			"paths=%d qps=%d", buf(20, 4):uint(), buf(24, 4):uint(),
			buf(32, 1):uint(), buf(33, 1):uint())
		return finish(table.concat(info, " "))
	end

	if not ck.reason then
		if hlen ~= expect then
			ck:fail("bad_hlen", "HLen " .. hlen .. " bytes, " .. name ..
				" with these flags has " .. expect, bh)
		elseif len < hlen then
			ck:fail("truncated", "datagram shorter than its header", bh)
		elseif len ~= hlen + plen then
			ck:fail("bad_plen", "datagram of " .. len .. " bytes, " ..
				"header and PLen say " .. hlen + plen, bh)
		end
	end
	-- Dissect what the opcode and flags imply, as far as the bytes go.
	if len < expect then
		return finish(table.concat(info, " "))
	end

	local off = 20
	if has_dsn(op) then
		off = dissect_rc(buf, tree, ck, op, flags, plen, info)
	elseif op == OP.ACK_REQ then
		local t = tree:add(metaroce, buf(20, 8), "ACK_REQ header")
		local _, dst = add_qpn(t, f.dst_qpn, buf(20, 4))
		local _, src = add_qpn(t, f.src_qpn, buf(24, 4))
		off = 28
		info[#info + 1] = string.format("qp=0x%x>0x%x", src, dst)
		if not ck.reason and (dst > QPN_MASK or src > QPN_MASK or
		    dst < 2 or src < 2) then
			ck:fail("bad_qpn", "QPN outside 2..0xffffff", t)
		end
	elseif op == OP.UD_SEND then
		local t = tree:add(metaroce, buf(20, 16), "UD header")
		local _, dst = add_qpn(t, f.dst_qpn, buf(20, 4))
		local _, src = add_qpn(t, f.src_qpn, buf(24, 4))
		t:add(f.qkey, buf(28, 4))
		local item = t:add(f.reserved, buf(32, 4))
		off = 36
		info[#info + 1] = string.format("qp=0x%x>0x%x qkey=0x%08x", src,
			dst, buf(28, 4):uint())
		if not ck.reason then
			if dst > QPN_MASK or src > QPN_MASK then
				ck:fail("bad_qpn", "a QPN's reserved top byte is set", t)
			elseif buf(32, 4):uint() ~= 0 then
				ck:fail("bad_field", "reserved word set", item)
			end
		end
	elseif op == OP.RESET then
		local t = tree:add(metaroce, buf(20, reset_len(ver)), "RESET")
		t:add(f.unknown_epoch, buf(20, 4))
		local cookie
		if ver >= 2 then
			_, cookie = add_u64(t, f.reset_cookie, buf(24, 8))
		end
		off = 20 + reset_len(ver)
		info[#info + 1] = string.format("unknown_epoch=0x%08x",
			buf(20, 4):uint())
		if not ck.reason then
			if buf(20, 4):uint() == 0 then
				ck:fail("bad_field", "Unknown Epoch 0", t)
			elseif cookie and u64_is_zero(cookie) then
				ck:fail("bad_field", "Cookie 0", t)
			end
		end
	end

	if has(flags, F_IMM) then
		tree:add(f.imm, buf(off, 4))
		off = off + 4
	elseif has(flags, F_INV) then
		tree:add(f.inv_rkey, buf(off, 4))
		off = off + 4
	end
	if has(flags, F_SYN) then
		local t = tree:add(metaroce, buf(off, syn_len(ver)), "SYN words")
		t:add(f.syn_dsn, buf(off, 4))
		if ver == 1 then
			t:add(f.syn_echo, buf(off + 4, 4))
		else
			t:add(f.syn_cookie, buf(off + 4, 8))
		end
		off = off + syn_len(ver)
	end
	if plen > 0 then
		info[#info + 1] = "len=" .. plen
	end
	if off < len then
		tree:add(f.payload, buf(off))
	end
	info[#info + 1] = string.format("epoch=0x%08x", epoch)
	return finish(table.concat(info, " "))
end

-- Registration on the UDP port, following the preference.
local udp_table = DissectorTable.get("udp.port")
local registered_port = DEFAULT_PORT
udp_table:add(registered_port, metaroce)

function metaroce.prefs_changed()
	local port = metaroce.prefs.udp_port
	if port ~= registered_port then
		if registered_port ~= 0 then
			udp_table:remove(registered_port, metaroce)
		end
		if port ~= 0 then
			udp_table:add(port, metaroce)
		end
		registered_port = port
	end
end
