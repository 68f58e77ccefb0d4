// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cq_unit: cq.c's polling against a fake kernel, no device needed (prints
 * TAP): the kernel's IB_WC_* flags become IBV_WC_* ones, big polls are
 * split, and the extended poll API hands out every completion exactly once
 * and in order, also when mixed with ibv_poll_cq().  The same for a CQ
 * with a shared ring, written here as the kernel does (index wrap-around
 * included), without a single command; cleaning a QP's completions out of
 * a ring; and the checks on the ring a response describes.
 */
#include "cq.c"

#include <stdio.h>

#include "tap.h"

/* --- the fake kernel: a queue of completions ----------------------------- */

static struct {
	uint64_t next_id;	/* wr_id of the next completion */
	uint64_t end_id;	/* no completions from here on */
	unsigned int calls;
	int max_ne;		/* largest ne asked for */
	int fail;		/* errno for the next call, once */
	unsigned int kflags;	/* wc_flags of every completion */
} k;

int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	int n = 0;

	k.calls++;
	if (ne > k.max_ne)
		k.max_ne = ne;
	if (k.fail) {
		errno = k.fail;
		k.fail = 0;
		return -1;
	}
	while (n < ne && k.next_id < k.end_id) {
		wc[n] = (struct ibv_wc){
			.wr_id = k.next_id,
			.status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV,
			.byte_len = (uint32_t)k.next_id * 10,
			.imm_data = htobe32(0x1000 + (uint32_t)k.next_id),
			.qp_num = 42,
			.src_qp = 43,
			.wc_flags = k.kflags,
			.slid = 5,
			.sl = 6,
			.dlid_path_bits = 7,
		};
		k.next_id++;
		n++;
	}
	return n;
}

/* Not reached by these tests. */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size)
{
	return ENOSYS;
}

int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
#if MRV_PABI_GEN >= 65
			 struct verbs_create_cq_prov_attr *prov_attr,
#endif
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags)
{
	return ENOSYS;
}

int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ENOSYS;
}

int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size)
{
	return ENOSYS;
}

int ibv_cmd_destroy_cq(struct ibv_cq *cq)
{
	return ENOSYS;
}

static void k_reset(uint64_t first, uint64_t end)
{
	memset(&k, 0, sizeof(k));
	k.next_id = first;
	k.end_id = end;
}

static struct mrv_cq *make_cq(bool ex)
{
	struct mrv_cq *cq = mrv_cq_alloc();

	if (!cq)
		abort();
	cq->ex = ex;
	if (ex)
		mrv_init_cq_ex_ops(&cq->vcq.cq_ex);
	return cq;
}

static void test_flags(void)
{
	static const struct {
		unsigned int kernel, ibv;
		const char *what;
	} map[] = {
		{ 1 << 0, IBV_WC_GRH, "GRH" },
		{ 1 << 1, IBV_WC_WITH_IMM, "WITH_IMM" },
		{ 1 << 2, IBV_WC_WITH_INV, "WITH_INVALIDATE -> IBV_WC_WITH_INV" },
		{ 1 << 3, IBV_WC_IP_CSUM_OK, "IP_CSUM_OK -> IBV_WC_IP_CSUM_OK" },
		{ 1 << 4, 0, "WITH_SMAC dropped" },
		{ 1 << 5, 0, "WITH_VLAN dropped" },
		{ 1 << 6, 0, "WITH_NETWORK_HDR_TYPE dropped" },
	};
	struct mrv_cq *cq = make_cq(false);
	struct ibv_wc wc;
	size_t i;
	int n;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		k_reset(0, 1);
		k.kflags = map[i].kernel;
		n = mrv_poll_cq(&cq->vcq.cq, 1, &wc);
		tap_ok(n == 1 && wc.wc_flags == map[i].ibv,
		       "kernel wc flag 0x%x: %s (got 0x%x)", map[i].kernel,
		       map[i].what, wc.wc_flags);
	}
	mrv_cq_free(cq);
}

static void test_poll(void)
{
	struct mrv_cq *cq = make_cq(false);
	struct ibv_wc wc[300];
	int i, n;

	k_reset(0, 1000);
	n = mrv_poll_cq(&cq->vcq.cq, 300, wc);
	for (i = 0; i < n; i++)
		if (wc[i].wr_id != (uint64_t)i)
			break;
	tap_ok(n == 300 && i == 300 && k.max_ne == MRV_POLL_CHUNK,
	       "300 entries in commands of at most %d, in order (%d, largest %d)",
	       MRV_POLL_CHUNK, n, k.max_ne);

	k_reset(0, 70);
	n = mrv_poll_cq(&cq->vcq.cq, 300, wc);
	tap_ok(n == 70 && k.calls == 2,
	       "a short command ends the poll (%d in %u commands)", n, k.calls);

	k_reset(0, 0);
	tap_ok(mrv_poll_cq(&cq->vcq.cq, 0, wc) == 0 && k.calls == 0,
	       "polling 0 entries asks nothing");
	tap_ok(mrv_poll_cq(&cq->vcq.cq, -1, wc) < 0 && errno == EINVAL,
	       "polling -1 entries: EINVAL");

	k_reset(0, 10);
	k.fail = EIO;
	n = mrv_poll_cq(&cq->vcq.cq, 5, wc);
	tap_ok(n == -1 && errno == EIO, "a failed command: -1, errno kept (%d)",
	       n);

	/* Completions taken from the kernel are never dropped. */
	k_reset(0, 1000);
	n = mrv_poll_cq(&cq->vcq.cq, MRV_POLL_CHUNK, wc);
	k.fail = EIO;
	n = mrv_poll_cq(&cq->vcq.cq, MRV_POLL_CHUNK + 10, wc);
	tap_ok(n == -1, "a failure on the first command of a poll is reported");
	n = mrv_poll_cq(&cq->vcq.cq, 1, wc);
	tap_ok(n == 1 && wc[0].wr_id == MRV_POLL_CHUNK,
	       "... and nothing was lost (%llu)",
	       (unsigned long long)wc[0].wr_id);
	mrv_cq_free(cq);
}

static void test_ex(void)
{
	struct mrv_cq *cq = make_cq(true);
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc[40];
	uint64_t expect = 0;
	bool order = true, fields;
	int ret, n, i, got = 0;

	k_reset(0, 0);
	ret = ibv_start_poll(cqx, &attr);
	tap_ok(ret == ENOENT, "start_poll on an empty CQ: ENOENT (%d)", ret);
	tap_ok(!pthread_mutex_trylock(&cq->lock),
	       "... and the CQ is not left locked");
	pthread_mutex_unlock(&cq->lock);

	attr.comp_mask = 1;
	tap_ok(ibv_start_poll(cqx, &attr) == EINVAL,
	       "start_poll with an unknown comp_mask: EINVAL");
	attr.comp_mask = 0;

	k_reset(0, 40);
	k.kflags = 1 << 1;	/* IB_WC_WITH_IMM */
	ret = ibv_start_poll(cqx, &attr);
	fields = !ret && cqx->wr_id == 0 && cqx->status == IBV_WC_SUCCESS;
	ret = ibv_next_poll(cqx);
	fields = fields && !ret && cqx->wr_id == 1 &&
		 ibv_wc_read_opcode(cqx) == IBV_WC_RECV &&
		 ibv_wc_read_byte_len(cqx) == 10 &&
		 ibv_wc_read_imm_data(cqx) == htobe32(0x1001) &&
		 ibv_wc_read_qp_num(cqx) == 42 &&
		 ibv_wc_read_src_qp(cqx) == 43 &&
		 ibv_wc_read_wc_flags(cqx) == IBV_WC_WITH_IMM &&
		 ibv_wc_read_slid(cqx) == 5 && ibv_wc_read_sl(cqx) == 6 &&
		 ibv_wc_read_dlid_path_bits(cqx) == 7 &&
		 ibv_wc_read_vendor_err(cqx) == 0;
	tap_ok(fields, "start_poll, next_poll and every reader");
	expect = 2;
	/* Take 3 more, then stop mid-batch. */
	for (i = 0; i < 3; i++) {
		ret = ibv_next_poll(cqx);
		order &= !ret && cqx->wr_id == expect++;
	}
	ibv_end_poll(cqx);
	tap_ok(order && k.calls == 1,
	       "5 completions from one batch of %d (%u commands)", MRV_CQ_BATCH,
	       k.calls);

	/* ibv_poll_cq gets the rest of the batch first, then the kernel. */
	n = mrv_poll_cq(ibv_cq_ex_to_cq(cqx), 20, wc);
	for (i = 0; i < n; i++)
		order &= wc[i].wr_id == expect++;
	tap_ok(n == 20 && order && wc[0].wr_id == 5,
	       "ibv_poll_cq continues where end_poll stopped (%d from %llu)",
	       n, n ? (unsigned long long)wc[0].wr_id : 0ULL);

	/* The extended API again, to the end. */
	ret = ibv_start_poll(cqx, &attr);
	while (!ret) {
		order &= cqx->wr_id == expect++;
		got++;
		ret = ibv_next_poll(cqx);
	}
	tap_ok(ret == ENOENT && got == 15 && order && expect == 40,
	       "... and start_poll/next_poll take the last 15, then ENOENT (%d)",
	       got);
	ibv_end_poll(cqx);
	tap_ok(!pthread_mutex_trylock(&cq->lock), "end_poll unlocks the CQ");
	pthread_mutex_unlock(&cq->lock);

	k_reset(100, 110);
	k.fail = EIO;
	ret = ibv_start_poll(cqx, &attr);
	tap_ok(ret == EIO && !pthread_mutex_trylock(&cq->lock),
	       "a failed command: start_poll returns the errno, CQ unlocked (%d)",
	       ret);
	pthread_mutex_unlock(&cq->lock);
	ret = ibv_start_poll(cqx, &attr);
	tap_ok(!ret && cqx->wr_id == 100, "... and the next start_poll works");
	ibv_end_poll(cqx);
	mrv_cq_free(cq);
}

/* --- CQs with a ring ------------------------------------------------------ */

/* A ring of @slots entries in anonymous memory, indices starting at @start. */
static struct mrv_cq *make_ring_cq(bool ex, uint32_t slots, uint32_t start)
{
	struct mrv_cq *cq = make_cq(ex);

	cq->ring_size = METAROCE_CQ_RING_ENTRIES +
			slots * sizeof(struct metaroce_cqe);
	cq->ring = mmap(NULL, cq->ring_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cq->ring == MAP_FAILED)
		abort();
	cq->slots = slots;
	cq->consumer = start;
	cq->ring->producer = start;
	cq->ring->consumer = start;
	return cq;
}

/* What the kernel does: room checked, entry, then the index (release). */
static bool k_push(struct mrv_cq *cq, uint64_t wr_id, uint32_t qp_num,
		   uint32_t flags)
{
	uint32_t prod = cq->ring->producer;
	struct metaroce_cqe *e;

	if (prod - __atomic_load_n(&cq->ring->consumer, __ATOMIC_ACQUIRE) >=
	    cq->slots)
		return false;
	e = mrv_ring_entry(cq, prod);
	*e = (struct metaroce_cqe){
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV_RDMA_WITH_IMM,
		.byte_len = (uint32_t)wr_id * 10,
		.imm = htobe32(0x2000 + (uint32_t)wr_id),
		.qp_num = qp_num,
		.src_qp = 43,
		.flags = flags,
		.pkey_index = 1,
		.slid = 5,
		.sl = 6,
		.dlid_path_bits = 7,
	};
	__atomic_store_n(&cq->ring->producer, prod + 1, __ATOMIC_RELEASE);
	return true;
}

static void test_ring_poll(void)
{
	struct mrv_cq *cq = make_ring_cq(false, 8, 0);
	struct ibv_wc wc[16];
	bool order = true, fields;
	uint64_t id = 0, next = 0;
	int i, n, rounds;

	k_reset(0, 1000);	/* POLL_CQ would have plenty: it must not be used */
	for (i = 0; i < 5; i++)
		k_push(cq, id++, 42, METAROCE_CQE_WITH_IMM);
	n = mrv_poll_cq(&cq->vcq.cq, 16, wc);
	fields = n == 5 && wc[1].wr_id == 1 && wc[1].status == IBV_WC_SUCCESS &&
		 wc[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		 wc[1].byte_len == 10 && wc[1].imm_data == htobe32(0x2001) &&
		 wc[1].qp_num == 42 && wc[1].src_qp == 43 &&
		 wc[1].wc_flags == IBV_WC_WITH_IMM && wc[1].pkey_index == 1 &&
		 wc[1].slid == 5 && wc[1].sl == 6 && wc[1].dlid_path_bits == 7;
	tap_ok(fields && k.calls == 0,
	       "ring: 5 completions, every field, no command (%d, %u commands)",
	       n, k.calls);
	tap_ok(cq->ring->consumer == 5,
	       "ring: the consumer index is published (%u)", cq->ring->consumer);
	tap_ok(mrv_poll_cq(&cq->vcq.cq, 16, wc) == 0, "ring: then empty");

	/* Full ring: the kernel stops; polling makes room. */
	for (i = 0; i < 9; i++)
		if (!k_push(cq, id, 42, 0))
			break;
		else
			id++;
	tap_ok(i == 8, "ring of 8: the kernel finds room for 8 (%d)", i);
	next = 5;
	n = mrv_poll_cq(&cq->vcq.cq, 3, wc);
	for (i = 0; i < n; i++)
		order &= wc[i].wr_id == next++;
	tap_ok(n == 3 && order && k_push(cq, id++, 42, 0),
	       "ring: a poll of 3 takes 3 and frees a slot");
	mrv_cq_free(cq);

	/* Indices that wrap around 2^32 while the ring turns many times. */
	cq = make_ring_cq(false, 8, UINT32_MAX - 20);
	id = next = 0;
	for (rounds = 0; rounds < 20; rounds++) {
		for (i = 0; i < 1 + rounds % 7; i++)
			if (k_push(cq, id, 42, 0))
				id++;
		n = mrv_poll_cq(&cq->vcq.cq, 3, wc);
		for (i = 0; i < n; i++)
			order &= wc[i].wr_id == next++;
	}
	while ((n = mrv_poll_cq(&cq->vcq.cq, 16, wc)) > 0)
		for (i = 0; i < n; i++)
			order &= wc[i].wr_id == next++;
	tap_ok(order && next == id && id > 50 &&
	       cq->consumer == cq->ring->producer && cq->consumer < 1000,
	       "ring: indices wrap around 2^32, %llu completions in order",
	       (unsigned long long)next);
	mrv_cq_free(cq);
}

static void test_ring_flags(void)
{
	static const struct {
		uint32_t cqe;
		unsigned int ibv;
	} map[] = {
		{ METAROCE_CQE_GRH, IBV_WC_GRH },
		{ METAROCE_CQE_WITH_IMM, IBV_WC_WITH_IMM },
		{ METAROCE_CQE_WITH_INV, IBV_WC_WITH_INV },
		{ METAROCE_CQE_IP_CSUM_OK, IBV_WC_IP_CSUM_OK },
		{ 1U << 31, 0 },
	};
	struct mrv_cq *cq = make_ring_cq(false, 8, 0);
	struct ibv_wc wc;
	bool ok = true;
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		k_push(cq, i, 42, map[i].cqe);
		ok &= mrv_poll_cq(&cq->vcq.cq, 1, &wc) == 1 &&
		      wc.wc_flags == map[i].ibv;
	}
	tap_ok(ok, "ring: each METAROCE_CQE_* flag becomes its IBV_WC_* flag, unknown ones none");
	mrv_cq_free(cq);
}

static void test_ring_ex(void)
{
	struct mrv_cq *cq = make_ring_cq(true, 8, UINT32_MAX - 3);
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	uint64_t id = 0, next = 0;
	bool order = true;
	int ret, i, round;

	k_reset(0, 1000);
	tap_ok(ibv_start_poll(cqx, &attr) == ENOENT, "ring, extended: empty: ENOENT");
	for (round = 0; round < 10; round++) {
		for (i = 0; i < 8; i++)
			order &= k_push(cq, id++, 42, METAROCE_CQE_WITH_IMM);
		ret = ibv_start_poll(cqx, &attr);
		while (!ret) {
			order &= cqx->wr_id == next++ &&
				 ibv_wc_read_imm_data(cqx) ==
					 htobe32(0x2000 + (uint32_t)cqx->wr_id);
			ret = ibv_next_poll(cqx);
		}
		ibv_end_poll(cqx);
		order &= ret == ENOENT;
	}
	tap_ok(order && next == 80 && k.calls == 0,
	       "ring, extended: 10 fills of the ring, 80 in order, no command");
	mrv_cq_free(cq);
}

static void test_ring_clean(void)
{
	struct mrv_cq *cq = make_ring_cq(true, 64, UINT32_MAX - 5);
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc[32];
	bool ok = true;
	int i, n;

	/*
	 * 40 completions, of QPs 7 (even wr_id) and 9 (odd) alternating:
	 * start_poll takes a batch of 16 and end_poll consumes the first.
	 */
	for (i = 0; i < 40; i++)
		k_push(cq, i, i % 2 ? 9 : 7, 0);
	ibv_start_poll(cqx, &attr);
	ibv_end_poll(cqx);
	mrv_cq_clean(&cq->vcq.cq, 7);
	tap_ok(cq->count == 8 && cq->ring->consumer == cq->consumer &&
	       cq->ring->producer - cq->consumer == 12,
	       "clean: 8 left in the batch, 12 in the ring, the freed slots given back (%u, %u)",
	       cq->count, cq->ring->producer - cq->consumer);
	ok &= k_push(cq, 41, 9, 0) && k_push(cq, 43, 9, 0);
	n = mrv_poll_cq(&cq->vcq.cq, 32, wc);
	for (i = 0; i < n; i++)
		ok &= wc[i].qp_num == 9 && wc[i].wr_id == (uint64_t)(2 * i + 1);
	tap_ok(ok && n == 22,
	       "clean: only the other QP's completions remain, in order, new ones after (%d)",
	       n);
	mrv_cq_clean(&cq->vcq.cq, 9);
	tap_ok(mrv_poll_cq(&cq->vcq.cq, 16, wc) == 0 && cq->consumer ==
	       cq->ring->producer, "clean of an empty CQ");
	mrv_cq_free(cq);
}

static void test_ring_map(void)
{
	struct metaroce_create_cq_resp r = {
		.comp_mask = METAROCE_CQ_RING,
		.slots = 8,
		.mmap_size = METAROCE_CQ_RING_ENTRIES + 8 * sizeof(struct metaroce_cqe),
	};
	struct ibv_context ctx = { .cmd_fd = -1 };
	struct metaroce_create_cq_resp bad;

	r.comp_mask = 0;
	tap_ok(mrv_ring_map(&ctx, &r) == NULL, "map: no ring offered: none used");
	r.comp_mask = METAROCE_CQ_RING;
	bad = r;
	bad.slots = 0;
	errno = 0;
	tap_ok(mrv_ring_map(&ctx, &bad) == MAP_FAILED && errno == EPROTO,
	       "map: 0 slots: EPROTO");
	bad.slots = 12;
	tap_ok(mrv_ring_map(&ctx, &bad) == MAP_FAILED && errno == EPROTO,
	       "map: 12 slots (not a power of two): EPROTO");
	bad = r;
	bad.mmap_size -= 1;
	tap_ok(mrv_ring_map(&ctx, &bad) == MAP_FAILED && errno == EPROTO,
	       "map: a mapping too small for its slots: EPROTO");
	errno = 0;
	tap_ok(mrv_ring_map(&ctx, &r) == MAP_FAILED && errno == EBADF,
	       "map: a good response is mapped from the command file");
}

int main(void)
{
	tap_plan(41);
	test_flags();
	test_poll();
	test_ex();
	test_ring_poll();
	test_ring_flags();
	test_ring_ex();
	test_ring_clean();
	test_ring_map();
	return tap_done();
}
