// SPDX-License-Identifier: GPL-2.0-only
/*
 * The two-host verbs tools' common set-up (verbs_tool.h says what each
 * function does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "verbs_tool.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- the TCP side channel -------------------------------------------------- */

static int link_connect(const char *server, const char *service, int port,
			int tries)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1;

	if (getaddrinfo(server, service, &hints, &res))
		die("cannot resolve %s", server);
	for (int t = 0; t < tries && fd < 0; t++) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, SOCK_STREAM, 0);
			if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
		if (fd < 0)
			usleep(100000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		die("cannot connect to %s:%d", server, port);
	return fd;
}

static int link_accept(const char *service, int port)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE,
		.ai_family = AF_INET6,
	}, *res;
	int one = 1, fd, ls;

	if (getaddrinfo(NULL, service, &hints, &res))
		die("getaddrinfo");
	ls = socket(res->ai_family, SOCK_STREAM, 0);
	if (ls >= 0)
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, res->ai_addr, res->ai_addrlen) ||
	    listen(ls, 1))
		die("listen on %d: %s", port, strerror(errno));
	freeaddrinfo(res);
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	close(ls);
	return fd;
}

int vt_link(const char *server, int port, int tries)
{
	char service[16];

	snprintf(service, sizeof(service), "%d", port);
	if (server)
		return link_connect(server, service, port, tries);
	return link_accept(service, port);
}

void vt_send(int fd, const void *p, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const char *)p + done, len - done);

		if (n <= 0)
			die("tcp write: %s", strerror(errno));
		done += (size_t)n;
	}
}

void vt_recv(int fd, void *p, size_t len, double deadline)
{
	for (size_t got = 0; got < len;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (deadline > 0 && poll(&pfd, 1, 1000) == 0) {
			if (now_s() > deadline)
				die("timed out waiting for the other side");
			continue;
		}
		n = read(fd, (char *)p + got, len - got);
		if (n <= 0)
			die("tcp read: %s", n ? strerror(errno) : "peer closed");
		got += (size_t)n;
	}
}

void vt_sync(int fd, uint32_t what, double deadline)
{
	uint32_t theirs;

	vt_send(fd, &what, sizeof(what));
	vt_recv(fd, &theirs, sizeof(theirs), deadline);
	if (theirs != what)
		die("out of step: at %u, the other side at %u", what, theirs);
}

void vt_swap_qps(int fd, const uint32_t *qpn, const uint32_t *psn,
		 uint32_t *rqpn, uint32_t *rpsn, unsigned int n,
		 double deadline)
{
	vt_send(fd, qpn, n * sizeof(*qpn));
	vt_send(fd, psn, n * sizeof(*psn));
	vt_recv(fd, rqpn, n * sizeof(*rqpn), deadline);
	vt_recv(fd, rpsn, n * sizeof(*rpsn), deadline);
}

/* --- verbs ------------------------------------------------------------------ */

struct ibv_context *vt_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;

	if (!list)
		die("no RDMA devices");
	for (int i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev)
		die("device %s not found", name ? name : "(any)");
	ctx = ibv_open_device(dev);
	if (!ctx)
		die("ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	return ctx;
}

void vt_gid(struct ibv_context *ctx, int gidx, uint8_t gid[16])
{
	union ibv_gid g;

	if (ibv_query_gid(ctx, 1, gidx, &g))
		die("ibv_query_gid %d: %s", gidx, strerror(errno));
	memcpy(gid, g.raw, 16);
}

enum ibv_mtu vt_active_mtu(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port: %s", strerror(errno));
	return pa.active_mtu;
}

uint32_t vt_psn(void)
{
	static int seeded;

	if (!seeded) {
		srand48(getpid() ^ time(NULL));
		seeded = 1;
	}
	return (uint32_t)lrand48() & 0xffffff;
}

struct ibv_qp *vt_rc_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qa,
			unsigned int access, unsigned int i)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = access,
	};
	struct ibv_qp *qp;

	qp = ibv_create_qp(pd, qa);
	if (!qp)
		die("ibv_create_qp #%u: %s", i, strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify #%u to INIT: %s", i, strerror(errno));
	return qp;
}

void vt_rc_connect(struct ibv_qp *qp, const struct vt_path *p, uint32_t dqpn,
		   uint32_t dpsn, uint32_t psn, unsigned int i)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = p->mtu,
		.dest_qp_num = dqpn,
		.rq_psn = dpsn,
		.max_dest_rd_atomic = p->rd_atomic,
		.min_rnr_timer = p->min_rnr_timer,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .sgid_index = (uint8_t)p->sgid_index,
				 .hop_limit = 64 },
		},
	};

	memcpy(a.ah_attr.grh.dgid.raw, p->dgid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die("modify #%u to RTR: %s", i, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = p->timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = p->rd_atomic;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify #%u to RTS: %s", i, strerror(errno));
}

/* --- finding a QP by its number ----------------------------------------------- */

static int cmp_slot(const void *a, const void *b)
{
	uint32_t x = ((const struct vt_qpn_slot *)a)->qpn;
	uint32_t y = ((const struct vt_qpn_slot *)b)->qpn;

	return x < y ? -1 : x > y;
}

void vt_qpn_index(struct vt_qpn_index *x, const uint32_t *qpn, unsigned int n)
{
	x->n = n;
	x->slot = calloc(n, sizeof(*x->slot));
	if (!x->slot)
		die("out of memory");
	for (unsigned int i = 0; i < n; i++)
		x->slot[i] = (struct vt_qpn_slot){ .qpn = qpn[i], .idx = i };
	qsort(x->slot, n, sizeof(*x->slot), cmp_slot);
}

int64_t vt_qpn_find(const struct vt_qpn_index *x, uint32_t qpn)
{
	unsigned int lo = 0, hi = x->n;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (x->slot[mid].qpn < qpn)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < x->n && x->slot[lo].qpn == qpn)
		return x->slot[lo].idx;
	return -1;
}

void vt_qpn_index_free(struct vt_qpn_index *x)
{
	free(x->slot);
	x->slot = NULL;
	x->n = 0;
}

/* --- pausing for the test ------------------------------------------------------- */

void vt_pause(const char *path, const char *what, double deadline)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "%s\n", what);
	fclose(f);
	while (!access(path, F_OK)) {
		if (now_s() > deadline)
			die("timed out waiting for %s to go", path);
		usleep(50000);
	}
}
