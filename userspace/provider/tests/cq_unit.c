// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cq_unit: cq.c's polling against a fake kernel, no device needed (prints
 * TAP): the kernel's IB_WC_* flags become IBV_WC_* ones, big polls are
 * split, and the extended poll API hands out every completion exactly once
 * and in order, also when mixed with ibv_poll_cq().
 */
#include "cq.c"

#include <stdarg.h>
#include <stdio.h>

static unsigned int test_num, test_failed;

static void tap(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %u - ", ok ? "ok" : "not ok", ++test_num);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!ok)
		test_failed++;
}

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

static struct mr_cq *make_cq(bool ex)
{
	struct mr_cq *cq = mr_cq_alloc();

	if (!cq)
		abort();
	cq->ex = ex;
	if (ex)
		mr_init_cq_ex_ops(&cq->vcq.cq_ex);
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
	struct mr_cq *cq = make_cq(false);
	struct ibv_wc wc;
	size_t i;
	int n;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		k_reset(0, 1);
		k.kflags = map[i].kernel;
		n = mr_poll_cq(&cq->vcq.cq, 1, &wc);
		tap(n == 1 && wc.wc_flags == map[i].ibv,
		    "kernel wc flag 0x%x: %s (got 0x%x)", map[i].kernel,
		    map[i].what, wc.wc_flags);
	}
	mr_cq_free(cq);
}

static void test_poll(void)
{
	struct mr_cq *cq = make_cq(false);
	struct ibv_wc wc[300];
	int i, n;

	k_reset(0, 1000);
	n = mr_poll_cq(&cq->vcq.cq, 300, wc);
	for (i = 0; i < n; i++)
		if (wc[i].wr_id != (uint64_t)i)
			break;
	tap(n == 300 && i == 300 && k.max_ne == MR_POLL_CHUNK,
	    "300 entries in commands of at most %d, in order (%d, largest %d)",
	    MR_POLL_CHUNK, n, k.max_ne);

	k_reset(0, 70);
	n = mr_poll_cq(&cq->vcq.cq, 300, wc);
	tap(n == 70 && k.calls == 2,
	    "a short command ends the poll (%d in %u commands)", n, k.calls);

	k_reset(0, 0);
	tap(mr_poll_cq(&cq->vcq.cq, 0, wc) == 0 && k.calls == 0,
	    "polling 0 entries asks nothing");
	tap(mr_poll_cq(&cq->vcq.cq, -1, wc) < 0 && errno == EINVAL,
	    "polling -1 entries: EINVAL");

	k_reset(0, 10);
	k.fail = EIO;
	n = mr_poll_cq(&cq->vcq.cq, 5, wc);
	tap(n == -1 && errno == EIO, "a failed command: -1, errno kept (%d)",
	    n);

	/* Completions taken from the kernel are never dropped. */
	k_reset(0, 1000);
	n = mr_poll_cq(&cq->vcq.cq, MR_POLL_CHUNK, wc);
	k.fail = EIO;
	n = mr_poll_cq(&cq->vcq.cq, MR_POLL_CHUNK + 10, wc);
	tap(n == -1, "a failure on the first command of a poll is reported");
	n = mr_poll_cq(&cq->vcq.cq, 1, wc);
	tap(n == 1 && wc[0].wr_id == MR_POLL_CHUNK,
	    "... and nothing was lost (%llu)",
	    (unsigned long long)wc[0].wr_id);
	mr_cq_free(cq);
}

static void test_ex(void)
{
	struct mr_cq *cq = make_cq(true);
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc[40];
	uint64_t expect = 0;
	bool order = true, fields;
	int ret, n, i, got = 0;

	k_reset(0, 0);
	ret = ibv_start_poll(cqx, &attr);
	tap(ret == ENOENT, "start_poll on an empty CQ: ENOENT (%d)", ret);
	tap(!pthread_mutex_trylock(&cq->lock),
	    "... and the CQ is not left locked");
	pthread_mutex_unlock(&cq->lock);

	attr.comp_mask = 1;
	tap(ibv_start_poll(cqx, &attr) == EINVAL,
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
	tap(fields, "start_poll, next_poll and every reader");
	expect = 2;
	/* Take 3 more, then stop mid-batch. */
	for (i = 0; i < 3; i++) {
		ret = ibv_next_poll(cqx);
		order &= !ret && cqx->wr_id == expect++;
	}
	ibv_end_poll(cqx);
	tap(order && k.calls == 1,
	    "5 completions from one batch of %d (%u commands)", MR_CQ_BATCH,
	    k.calls);

	/* ibv_poll_cq gets the rest of the batch first, then the kernel. */
	n = mr_poll_cq(ibv_cq_ex_to_cq(cqx), 20, wc);
	for (i = 0; i < n; i++)
		order &= wc[i].wr_id == expect++;
	tap(n == 20 && order && wc[0].wr_id == 5,
	    "ibv_poll_cq continues where end_poll stopped (%d from %llu)",
	    n, n ? (unsigned long long)wc[0].wr_id : 0ULL);

	/* The extended API again, to the end. */
	ret = ibv_start_poll(cqx, &attr);
	while (!ret) {
		order &= cqx->wr_id == expect++;
		got++;
		ret = ibv_next_poll(cqx);
	}
	tap(ret == ENOENT && got == 15 && order && expect == 40,
	    "... and start_poll/next_poll take the last 15, then ENOENT (%d)",
	    got);
	ibv_end_poll(cqx);
	tap(!pthread_mutex_trylock(&cq->lock), "end_poll unlocks the CQ");
	pthread_mutex_unlock(&cq->lock);

	k_reset(100, 110);
	k.fail = EIO;
	ret = ibv_start_poll(cqx, &attr);
	tap(ret == EIO && !pthread_mutex_trylock(&cq->lock),
	    "a failed command: start_poll returns the errno, CQ unlocked (%d)",
	    ret);
	pthread_mutex_unlock(&cq->lock);
	ret = ibv_start_poll(cqx, &attr);
	tap(!ret && cqx->wr_id == 100, "... and the next start_poll works");
	ibv_end_poll(cqx);
	mr_cq_free(cq);
}

int main(void)
{
	printf("1..24\n");
	test_flags();
	test_poll();
	test_ex();
	if (test_failed)
		printf("# %u of %u tests failed\n", test_failed, test_num);
	return test_failed ? 1 : 0;
}
