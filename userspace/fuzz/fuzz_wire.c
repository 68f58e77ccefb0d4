// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the packet parser (core/wire.c).
 *
 * Any bytes: decode never crashes and returns a stateless reason or the
 * header length; decoding without an ACK buffer gives the same verdict.
 * A packet that decodes is canonical: encoding what was decoded (the ACK
 * through mr_wire_encode_ack) reproduces its header bytes exactly, and
 * decoding those again gives the same fields.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <metaroce/mr_wire.h>

#define CHECK(cond) do { \
		if (!(cond)) { \
			fprintf(stderr, "check failed: %s (%s:%d)\n", #cond, \
				__FILE__, __LINE__); \
			abort(); \
		} \
	} while (0)

static int hdr_eq(const struct mr_hdr *a, const struct mr_hdr *b)
{
	return a->opcode == b->opcode && a->path == b->path &&
	       a->flags == b->flags && a->epoch == b->epoch &&
	       a->psn == b->psn && a->tsval == b->tsval &&
	       a->hlen == b->hlen && a->plen == b->plen &&
	       a->dst_qpn == b->dst_qpn && a->src_qpn == b->src_qpn &&
	       a->dsn == b->dsn && a->msn == b->msn && a->gen == b->gen &&
	       a->msg_len == b->msg_len && a->offset == b->offset &&
	       a->raddr == b->raddr && a->rkey == b->rkey &&
	       a->ssn == b->ssn && a->imm == b->imm &&
	       a->inv_rkey == b->inv_rkey && a->swap_add == b->swap_add &&
	       a->compare == b->compare && a->orig == b->orig &&
	       a->qkey == b->qkey;
}

static int ack_eq(const struct mr_ack *a, const struct mr_ack *b)
{
	u32 i;

	if (a->ack_epoch != b->ack_epoch || a->dsn_cum != b->dsn_cum ||
	    a->rate_hint != b->rate_hint || a->npath != b->npath ||
	    a->nqp != b->nqp)
		return 0;
	for (i = 0; i < a->npath; i++)
		if (a->path[i].path != b->path[i].path ||
		    a->path[i].ce_cnt != b->path[i].ce_cnt ||
		    a->path[i].rx_cnt != b->path[i].rx_cnt ||
		    a->path[i].base != b->path[i].base ||
		    a->path[i].tsecr != b->path[i].tsecr ||
		    memcmp(a->path[i].bitmap, b->path[i].bitmap,
			   sizeof(a->path[i].bitmap)))
			return 0;
	for (i = 0; i < a->nqp; i++)
		if (a->qp[i].status != b->qp[i].status ||
		    a->qp[i].qpn != b->qp[i].qpn ||
		    a->qp[i].gen != b->qp[i].gen ||
		    a->qp[i].msn != b->qp[i].msn ||
		    a->qp[i].aux != b->qp[i].aux)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 buf[MR_BASE_HLEN + MR_ACKH_LEN + MR_MAX_PATHS * MR_ACK_PATH_LEN +
		      MR_ACK_MAX_QP * MR_ACK_QP_LEN + MR_MAX_PAYLOAD];
	static struct mr_ack a1, a2;
	struct mr_hdr h1, h2, h3;
	u32 len = size > 0xffffffffu ? 0xffffffffu : (u32)size;
	int r1, r2, r3, e;

	r1 = mr_wire_decode(data, len, &h1, &a1);
	r2 = mr_wire_decode(data, len, &h2, NULL);
	CHECK(r1 == r2);
	if (r1 < 0) {
		CHECK(-r1 > MR_DROP_NONE && -r1 < MR_DROP_STATELESS_MAX);
		CHECK(strcmp(mr_drop_name(r1), "unknown"));
		return 0;
	}
	CHECK(hdr_eq(&h1, &h2));
	CHECK((u32)r1 == h1.hlen && (u32)r1 + h1.plen == len);
	CHECK(h1.plen <= MR_MAX_PAYLOAD && h1.epoch);
	CHECK(h1.hlen == (h1.opcode == MR_OP_ACK ?
			  MR_BASE_HLEN + MR_ACKH_LEN +
			  a1.npath * MR_ACK_PATH_LEN + a1.nqp * MR_ACK_QP_LEN :
			  mr_wire_hlen(h1.opcode, h1.flags)));
	if (h1.opcode == MR_OP_ACK)
		e = mr_wire_encode_ack(buf, sizeof(buf), &h1, &a1);
	else
		e = mr_wire_encode(buf, sizeof(buf), &h1);
	CHECK(e == r1);
	CHECK(!memcmp(buf, data, (size_t)r1));
	/* and once more with the payload */
	memcpy(buf + e, data + e, h1.plen);
	r3 = mr_wire_decode(buf, (u32)e + h1.plen, &h3, &a2);
	CHECK(r3 == r1 && hdr_eq(&h1, &h3));
	if (h1.opcode == MR_OP_ACK)
		CHECK(ack_eq(&a1, &a2));
	/* the encoder refuses a buffer one byte short */
	if (h1.opcode == MR_OP_ACK)
		CHECK(mr_wire_encode_ack(buf, (u32)e - 1, &h1, &a1) ==
		      -MR_DROP_TRUNCATED);
	else
		CHECK(mr_wire_encode(buf, (u32)e - 1, &h1) ==
		      -MR_DROP_TRUNCATED);
	return 0;
}
