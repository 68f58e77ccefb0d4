// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr_mcast: UD multicast between two hosts through the verbs alone
 * (ibv_attach_mcast), for an IPv4 or an IPv6 group.
 *
 * The receiver attaches --qps UD QPs to the group, each with --count
 * receives posted, and tells the sender over TCP. The sender sends --count
 * datagrams to the group (QPN 0xffffff), each numbered. Every receiver QP
 * must take every one of them, in order, with the GRH naming the group as
 * the destination and the sender's GID as the source. Then the receiver
 * detaches all its QPs and the sender sends --count more: none may arrive
 * within a second.
 *
 *   receiver: mr_mcast -d DEV [options] GROUP
 *   sender:   mr_mcast -d DEV -a ADDR [options] -s RECEIVER GROUP
 *
 * ADDR is the sender device's own address (whose RoCE v2 GID the packets
 * come from), GROUP an IPv4 or IPv6 multicast address, RECEIVER the receiver's
 * address for the TCP side channel. Prints "mr_mcast: OK ..." or a FAIL
 * line and exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "verbs_tool.h"

#define MC_QKEY		0x4d434b59u
#define MC_SIZE		256
#define MC_GRH		40
#define MC_MCAST_QPN	0xffffffu
#define MC_MAX_QPS	16

static const char *role = "receiver";

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mr_mcast: FAIL %s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* @text (IPv4 or IPv6) as a GID: IPv4 ones IPv4-mapped. */
static void to_gid(const char *text, uint8_t gid[16])
{
	struct in_addr a4;

	memset(gid, 0, 16);
	if (inet_pton(AF_INET, text, &a4) == 1) {
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(gid + 12, &a4, 4);
	} else if (inet_pton(AF_INET6, text, gid) != 1) {
		die("'%s' is not an IP address", text);
	}
}

/* The index of port 1's RoCE v2 GID @gid. */
static int gid_index(struct ibv_context *ctx, const uint8_t gid[16])
{
	struct ibv_port_attr pa;
	int i;

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port");
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, gid, 16))
			return i;
	}
	die("no RoCE v2 GID for the address given");
}

static struct ibv_qp *ud_qp(struct ibv_pd *pd, struct ibv_cq *cq, int depth)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = MC_QKEY,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("UD QP to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD QP to RTS");
	return qp;
}

/* Byte @i of datagram @n. */
static uint8_t pattern(uint32_t n, uint32_t i)
{
	return (uint8_t)(n * 31 + i * 7 + 1);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double deadline)
{
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (now_s() > deadline)
			return 0;
	if (n < 0)
		die("ibv_poll_cq");
	return 1;
}

static void sender(struct ibv_context *ctx, struct ibv_pd *pd, int sgidx,
		   const uint8_t group[16], const char *peer, int port,
		   int count)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, count, NULL, NULL, 0);
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .sgid_index = sgidx, .hop_limit = 8 },
	};
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *buf;
	int fd, round, i;

	buf = calloc(1, MC_SIZE);
	if (!cq || !buf)
		die("ibv_create_cq");
	mr = ibv_reg_mr(pd, buf, MC_SIZE, 0);
	if (!mr)
		die("ibv_reg_mr");
	qp = ud_qp(pd, cq, count);
	memcpy(aa.grh.dgid.raw, group, 16);
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("ibv_create_ah to the group");
	fd = vt_link(peer, port, 100);
	for (round = 0; round < 2; round++) {
		/* 1: the receiver is attached; 3: it detached. */
		vt_sync(fd, 1 + 2 * round, now_s() + 30);
		for (i = 0; i < count; i++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)buf, .length = MC_SIZE,
				.lkey = mr->lkey,
			};
			struct ibv_send_wr wr = {
				.wr_id = i, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.ud = { .ah = ah,
					   .remote_qpn = MC_MCAST_QPN,
					   .remote_qkey = MC_QKEY },
			}, *bad;
			struct ibv_wc wc;
			uint32_t k;

			for (k = 0; k < MC_SIZE; k++)
				buf[k] = pattern(i + round * count, k);
			if (ibv_post_send(qp, &wr, &bad))
				die("ibv_post_send %d", i);
			if (!poll_one(cq, &wc, now_s() + 10) ||
			    wc.status != IBV_WC_SUCCESS)
				die("send %d did not complete", i);
			/* One at a time: the receiver keeps up. */
			usleep(2000);
		}
		vt_sync(fd, 2 + 2 * round, now_s() + 30);
	}
	printf("mr_mcast: OK sender: %d datagrams to the group, twice\n",
	       count);
	close(fd);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(buf);
}

static void receiver(struct ibv_context *ctx, struct ibv_pd *pd,
		     const uint8_t group[16],
		     int port, int nqp, int count)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, nqp * count, NULL, NULL, 0);
	size_t slot = MC_GRH + MC_SIZE, len = slot * nqp * count;
	uint32_t next[MC_MAX_QPS] = { 0 }, qpn[MC_MAX_QPS];
	union ibv_gid mgid;
	struct ibv_qp *qp[MC_MAX_QPS];
	int fd, i, j, got = 0, late = 0;
	uint8_t sgid[16];
	struct ibv_mr *mr;
	uint8_t *buf;
	double deadline;

	buf = calloc(1, len);
	if (!cq || !buf)
		die("ibv_create_cq");
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	memcpy(mgid.raw, group, 16);
	for (i = 0; i < nqp; i++) {
		qp[i] = ud_qp(pd, cq, count);
		qpn[i] = qp[i]->qp_num;
		for (j = 0; j < count; j++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)buf +
					slot * (i * count + j),
				.length = slot, .lkey = mr->lkey,
			};
			struct ibv_recv_wr wr = {
				.wr_id = (uint64_t)i << 32 | j,
				.sg_list = &sge, .num_sge = 1,
			}, *bad;

			if (ibv_post_recv(qp[i], &wr, &bad))
				die("ibv_post_recv");
		}
		if (ibv_attach_mcast(qp[i], &mgid, 0))
			die("ibv_attach_mcast of QP %d", i);
	}
	fd = vt_link(NULL, port, 0);
	vt_sync(fd, 1, now_s() + 30);
	deadline = now_s() + 30;
	while (got < nqp * count) {
		struct ibv_wc wc;
		const uint8_t *p;
		uint32_t k;

		if (!poll_one(cq, &wc, deadline))
			die("%d of %d datagrams arrived", got, nqp * count);
		if (wc.status != IBV_WC_SUCCESS)
			die("receive completed with status %d", wc.status);
		i = wc.wr_id >> 32;
		j = (uint32_t)wc.wr_id;
		if (i >= nqp || wc.qp_num != qpn[i])
			die("a completion for QP %u names another", wc.qp_num);
		if ((uint32_t)j != next[i])
			die("QP %d: receive %d completed before %u", i, j,
			    next[i]);
		if (wc.byte_len != MC_GRH + MC_SIZE ||
		    !(wc.wc_flags & IBV_WC_GRH))
			die("QP %d datagram %d: %u bytes, flags %#x", i, j,
			    wc.byte_len, wc.wc_flags);
		p = buf + slot * (i * count + j);
		/* RoCE v2 GRH: an IPv4 header in the last 20 bytes. */
		if (group[10] == 0xff && group[11] == 0xff && !group[0]) {
			memset(sgid, 0, 10);
			sgid[10] = sgid[11] = 0xff;
			memcpy(sgid + 12, p + 20 + 12, 4);
			if (memcmp(p + 20 + 16, group + 12, 4))
				die("QP %d datagram %d: not to the group", i, j);
		} else {
			memcpy(sgid, p + 8, 16);
			if (memcmp(p + 24, group, 16))
				die("QP %d datagram %d: not to the group", i, j);
		}
		if (!memcmp(sgid, group, 16) || !sgid[15])
			die("QP %d datagram %d: no source address", i, j);
		for (k = 0; k < MC_SIZE; k++)
			if (p[MC_GRH + k] != pattern(j, k))
				die("QP %d datagram %d: byte %u is %#x, not %#x",
				    i, j, k, p[MC_GRH + k], pattern(j, k));
		next[i]++;
		got++;
	}
	vt_sync(fd, 2, now_s() + 30);
	for (i = 0; i < nqp; i++)
		if (ibv_detach_mcast(qp[i], &mgid, 0))
			die("ibv_detach_mcast of QP %d", i);
	/* Receives to take anything that still came. */
	for (i = 0; i < nqp; i++) {
		for (j = 0; j < count; j++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)buf +
					slot * (i * count + j),
				.length = slot, .lkey = mr->lkey,
			};
			struct ibv_recv_wr wr = { .sg_list = &sge,
						  .num_sge = 1 }, *bad;

			if (ibv_post_recv(qp[i], &wr, &bad))
				die("ibv_post_recv");
		}
	}
	vt_sync(fd, 3, now_s() + 30);
	vt_sync(fd, 4, now_s() + 60);
	deadline = now_s() + 1;
	for (;;) {
		struct ibv_wc wc;

		if (!poll_one(cq, &wc, deadline))
			break;
		late++;
	}
	if (late)
		die("%d datagrams arrived after every QP detached", late);
	printf("mr_mcast: OK receiver: %d QPs took %d datagrams each, in order, none once detached\n",
	       nqp, count);
	close(fd);
	for (i = 0; i < nqp; i++)
		ibv_destroy_qp(qp[i]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *addr = NULL, *peer = NULL;
	int port = 18650, nqp = 2, count = 20, op;
	uint8_t self[16], group[16];
	struct ibv_context *ctx;
	struct ibv_pd *pd;

	while ((op = getopt(argc, argv, "d:a:s:p:q:n:")) != -1) {
		switch (op) {
		case 'd': dev = optarg; break;
		case 'a': addr = optarg; break;
		case 's': peer = optarg; role = "sender"; break;
		case 'p': port = atoi(optarg); break;
		case 'q': nqp = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || !dev || (peer && !addr) || nqp < 1 ||
	    nqp > MC_MAX_QPS || count < 1 || count > 1000)
		goto usage;
	to_gid(argv[optind], group);
	ctx = vt_open_device(dev);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	if (peer) {
		to_gid(addr, self);
		sender(ctx, pd, gid_index(ctx, self), group, peer, port,
		       count);
	}
	else
		receiver(ctx, pd, group, port, nqp, count);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
usage:
	fprintf(stderr,
		"usage: mr_mcast -d DEV [-a ADDR] [-p PORT] [-q QPS] [-n COUNT] [-s RECEIVER] GROUP\n");
	return 2;
}
