// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr_misuse: a hostile user of the device's uverbs interface
 * (selftests/metaroce/misuse.sh). It talks to /dev/infiniband/uverbsN
 * directly, with the legacy write() commands that libibverbs would
 * otherwise build for it, so that every argument can be wrong, and checks
 * that each misuse gets the errno it should, that its own objects stay
 * usable, and that the kernel survives (the test runner fails the run on
 * any warning or oops in the kernel log). Prints TAP.
 *
 *   mr_misuse GROUP DEV GIDX [SECONDS]
 *
 * DEV is a metaroce device; GIDX the index of its RoCE v2 GID of an IPv4
 * address (QPs connect to themselves through it). GROUP is one of:
 *
 *   commands   every write() command the device has, and those it has
 *              not, with headers of the wrong size, responses that cannot
 *              be written, unknown command bits and extended headers
 *              that lie; before and after GET_CONTEXT
 *   requests   the driver-specific requests and responses (comp_mask,
 *              reserved words, lengths, rings asked for without room for
 *              the answer), and every size and count out of range: CQ
 *              entries, queue depths, SGEs, inline data, work request
 *              counts and sizes, opcodes, QP attributes, MR ranges
 *   handles    objects of the wrong type, destroyed twice, still in use,
 *              or never created; another process's handles, keys, AH
 *              numbers and mmap offsets; a process whose credentials
 *              changed since it opened the device
 *   mmap       ring mappings of the wrong size, offset, sharing or rights;
 *              mprotect(PROT_EXEC), mremap() to grow, use after the
 *              object is gone, a child of fork() touching the parent's ring
 *   rings      work requests written straight into a send ring that the
 *              kernel must refuse (reserved words, SGE counts, inline
 *              lengths, opcodes, flags, another PD's AH), each completing
 *              with IB_WC_LOC_QP_OP_ERR while good ones around it succeed
 *   scribble   for SECONDS (default 10): QPs connected to themselves
 *              stream RDMA WRITEs through their rings while other threads
 *              write random values over the send, receive and CQ rings,
 *              and modify, query, resize, reset and destroy what the
 *              streams use; everything is destroyed cleanly afterwards
 *   fork       fork() while threads are in the middle of commands: the
 *              child may use the inherited file (same credentials), has
 *              none of the rings, and exits with commands in flight; the
 *              parent's objects stay whole
 *   reset      for SECONDS: a UD QP without rings is reset again and again
 *              while it takes a flood of datagrams: once MODIFY_QP to
 *              RESET returned, its CQ holds none of its completions
 *   kill       children that create every kind of object and hammer
 *              commands and traffic are killed (SIGKILL) at random times,
 *              or _exit() with threads inside commands; the kernel cleans
 *              up after each (misuse.sh compares the device's resource
 *              counts before and after)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/metaroce-abi.h>

#include "tap.h"

static const char *ename(int e)
{
	static __thread char buf[32];

	switch (e) {
	case 0: return "success";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSPC: return "ENOSPC";
	case EFAULT: return "EFAULT";
	case ENOMEM: return "ENOMEM";
	case EBUSY: return "EBUSY";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOENT: return "ENOENT";
	case EBADF: return "EBADF";
	case EIO: return "EIO";
	case ENOSYS: return "ENOSYS";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

/* @got is @want (an errno, 0 for success). */
static void expect(int got, int want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void expect(int got, int want, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tap_ok(got == want, "%s: %s (expected %s)", what, ename(got), ename(want));
}

/*
 * @got is @a or @b: a handle that names nothing is ENOENT since 5.x's
 * lookups, EINVAL before; both mean the same.
 */
static void expect2(int got, int a, int b, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void expect2(int got, int a, int b, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tap_ok(got == a || got == b, "%s: %s (expected %s or %s)", what,
	       ename(got), ename(a), ename(b));
}

#define EXPECT_GONE(got, ...) expect2(got, ENOENT, EINVAL, __VA_ARGS__)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* xorshift: each thread its own. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* --- raw commands ------------------------------------------------------------ */

static char dev_path[300];
static int gidx;
static uint8_t own_gid[16];

/* /dev/infiniband/uverbsN of DEV. */
static void find_dev(const char *dev)
{
	char path[300], name[64];
	struct dirent *d;
	DIR *dir;
	FILE *f;

	dir = opendir("/sys/class/infiniband_verbs");
	if (!dir)
		tap_bail("/sys/class/infiniband_verbs: %s", strerror(errno));
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/%s/ibdev", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = 0;
			if (!strcmp(name, dev)) {
				snprintf(dev_path, sizeof(dev_path),
					 "/dev/infiniband/%s", d->d_name);
				fclose(f);
				closedir(dir);
				return;
			}
		}
		fclose(f);
	}
	tap_bail("no uverbs device for %s", dev);
}

static void read_gid(const char *dev)
{
	char path[256], s[64];
	unsigned int w[8];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/gids/%d",
		 dev, gidx);
	f = fopen(path, "r");
	if (!f || !fgets(s, sizeof(s), f))
		tap_bail("%s: %s", path, strerror(errno));
	fclose(f);
	if (sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2], &w[3],
		   &w[4], &w[5], &w[6], &w[7]) != 8)
		tap_bail("bad GID %s", s);
	for (i = 0; i < 8; i++) {
		own_gid[2 * i] = w[i] >> 8;
		own_gid[2 * i + 1] = w[i] & 255;
	}
}

static int dev_open(void)
{
	int fd = open(dev_path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		tap_bail("open %s: %s", dev_path, strerror(errno));
	return fd;
}

/*
 * One legacy command: @in (the request, whose first word is the response
 * pointer of the commands that have one, then any driver data) of @inlen
 * bytes; @outlen bytes of response are announced. 0 or the errno.
 */
static int cmd(int fd, uint32_t command, const void *in, size_t inlen,
	       size_t outlen)
{
	uint8_t buf[8192];
	struct ib_uverbs_cmd_hdr *h = (void *)buf;
	size_t len = sizeof(*h) + inlen;
	ssize_t n;

	if (len > sizeof(buf) || len % 4 || outlen % 4)
		tap_bail("command %u: bad lengths %zu/%zu", command, inlen, outlen);
	h->command = command;
	h->in_words = len / 4;
	h->out_words = outlen / 4;
	memcpy(buf + sizeof(*h), in, inlen);
	n = write(fd, buf, len);
	if (n < 0)
		return errno;
	return n == (ssize_t)len ? 0 : EIO;
}

/* write() exactly @len bytes of @buf: 0 or the errno. */
static int raw(int fd, const void *buf, size_t len)
{
	ssize_t n = write(fd, buf, len);

	if (n < 0)
		return errno;
	return n == (ssize_t)len ? 0 : EIO;
}

#define U64(p) ((uint64_t)(uintptr_t)(p))

/* --- objects ------------------------------------------------------------------ */

struct ring {
	void *addr;
	uint64_t offset, size;
	uint32_t slots, stride;
};

struct cq {
	uint32_t h;
	struct ring r;		/* addr NULL without a ring, or not mapped */
	uint32_t consumer;
};

struct qp {
	uint32_t h, qpn, pd, cq;
	struct ring sq, rq;
	uint32_t sq_prod;
	bool ud;
};

static int ctx_get(int fd, int *async_fd)
{
	struct {
		struct ib_uverbs_get_context c;
		struct metaroce_alloc_ucontext_req d;
	} req = {};
	struct {
		struct ib_uverbs_get_context_resp r;
		struct metaroce_alloc_ucontext_resp d;
	} resp = {};
	int err;

	req.c.response = U64(&resp);
	err = cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req, sizeof(req),
		  sizeof(resp));
	if (!err && async_fd)
		*async_fd = resp.r.async_fd;
	return err;
}

static int pd_alloc(int fd, uint32_t *h)
{
	struct ib_uverbs_alloc_pd req = {};
	struct {
		struct ib_uverbs_alloc_pd_resp r;
		struct metaroce_alloc_pd_resp d;
	} resp = {};
	int err;

	req.response = U64(&resp);
	err = cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &req, sizeof(req),
		  sizeof(resp));
	if (!err)
		*h = resp.r.pd_handle;
	return err;
}

static int pd_free(int fd, uint32_t h)
{
	struct ib_uverbs_dealloc_pd req = { .pd_handle = h };

	return cmd(fd, IB_USER_VERBS_CMD_DEALLOC_PD, &req, sizeof(req), 0);
}

static void *map_ring(int fd, struct ring *r)
{
	void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       r->offset);

	return p == MAP_FAILED ? NULL : p;
}

/* A CQ of @cqe entries, with a ring (mapped) if @ring. */
static int cq_create(int fd, uint32_t cqe, bool ring, struct cq *cq)
{
	struct {
		struct ib_uverbs_create_cq c;
		struct metaroce_create_cq_req d;
	} req = {};
	struct {
		struct ib_uverbs_create_cq_resp r;
		struct metaroce_create_cq_resp d;
	} resp = {};
	int err;

	memset(cq, 0, sizeof(*cq));
	req.c.response = U64(&resp);
	req.c.cqe = cqe;
	req.c.comp_channel = -1;
	req.d.comp_mask = ring ? METAROCE_CQ_RING : 0;
	err = cmd(fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, sizeof(req),
		  sizeof(resp));
	if (err)
		return err;
	cq->h = resp.r.cq_handle;
	if (ring) {
		cq->r.offset = resp.d.mmap_offset;
		cq->r.size = resp.d.mmap_size;
		cq->r.slots = resp.d.slots;
		cq->r.addr = map_ring(fd, &cq->r);
		if (!cq->r.addr)
			tap_bail("mmap of a CQ ring: %s", strerror(errno));
	}
	return 0;
}

static int cq_destroy(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_cq_resp resp;
	struct ib_uverbs_destroy_cq req = { .response = U64(&resp),
					    .cq_handle = h };

	return cmd(fd, IB_USER_VERBS_CMD_DESTROY_CQ, &req, sizeof(req),
		   sizeof(resp));
}

struct qp_opts {
	uint8_t type;		/* IBV_QPT_* */
	uint32_t wr, sge, inl;
	bool rings;
	uint32_t srq;		/* handle, ~0: none */
};

static int qp_create(int fd, uint32_t pd, uint32_t cqh,
		     const struct qp_opts *o, struct qp *qp)
{
	struct {
		struct ib_uverbs_create_qp c;
		struct metaroce_create_qp_req d;
	} req = {};
	struct {
		struct ib_uverbs_create_qp_resp r;
		struct metaroce_create_qp_resp d;
	} resp = {};
	int err;

	memset(qp, 0, sizeof(*qp));
	req.c.response = U64(&resp);
	req.c.pd_handle = pd;
	req.c.send_cq_handle = cqh;
	req.c.recv_cq_handle = cqh;
	req.c.max_send_wr = o->wr;
	req.c.max_recv_wr = o->srq == ~0u ? o->wr : 0;
	req.c.max_send_sge = o->sge;
	req.c.max_recv_sge = o->srq == ~0u ? o->sge : 0;
	req.c.max_inline_data = o->inl;
	req.c.qp_type = o->type;
	if (o->srq != ~0u) {
		req.c.is_srq = 1;
		req.c.srq_handle = o->srq;
	}
	req.c.sq_sig_all = 1;
	if (o->rings)
		req.d.comp_mask = METAROCE_QP_SQ_RING | METAROCE_QP_RQ_RING;
	err = cmd(fd, IB_USER_VERBS_CMD_CREATE_QP, &req, sizeof(req),
		  sizeof(resp));
	if (err)
		return err;
	qp->h = resp.r.qp_handle;
	qp->qpn = resp.r.qpn;
	qp->pd = pd;
	qp->cq = cqh;
	qp->ud = o->type == IBV_QPT_UD;
	if (resp.d.comp_mask & METAROCE_QP_SQ_RING) {
		qp->sq.offset = resp.d.sq_mmap_offset;
		qp->sq.size = resp.d.sq_mmap_size;
		qp->sq.slots = resp.d.sq_slots;
		qp->sq.stride = resp.d.sq_stride;
		qp->sq.addr = map_ring(fd, &qp->sq);
		if (!qp->sq.addr)
			tap_bail("mmap of a send ring: %s", strerror(errno));
	}
	if (resp.d.comp_mask & METAROCE_QP_RQ_RING) {
		qp->rq.offset = resp.d.rq_mmap_offset;
		qp->rq.size = resp.d.rq_mmap_size;
		qp->rq.slots = resp.d.rq_slots;
		qp->rq.stride = resp.d.rq_stride;
		qp->rq.addr = map_ring(fd, &qp->rq);
		if (!qp->rq.addr)
			tap_bail("mmap of a receive ring: %s", strerror(errno));
	}
	return 0;
}

static int qp_destroy(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp req = { .response = U64(&resp),
					    .qp_handle = h };

	return cmd(fd, IB_USER_VERBS_CMD_DESTROY_QP, &req, sizeof(req),
		   sizeof(resp));
}

static int qp_modify(int fd, struct ib_uverbs_modify_qp *m)
{
	return cmd(fd, IB_USER_VERBS_CMD_MODIFY_QP, m, sizeof(*m), 0);
}

static int qp_state(int fd, uint32_t h, int state)
{
	struct ib_uverbs_modify_qp m = {
		.qp_handle = h, .attr_mask = IBV_QP_STATE, .qp_state = state,
	};

	return qp_modify(fd, &m);
}

/* RESET -> INIT -> RTR -> RTS, connected to QP @dest on this device. */
static int qp_connect(int fd, const struct qp *qp, uint32_t dest)
{
	struct ib_uverbs_modify_qp m = {};
	int err;

	m.qp_handle = qp->h;
	m.qp_state = IBV_QPS_INIT;
	m.port_num = 1;
	if (qp->ud) {
		m.qkey = 0x11111111;
		m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_QKEY;
	} else {
		m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_LOCAL_WRITE;
		m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS;
	}
	err = qp_modify(fd, &m);
	if (err)
		return err;
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp->h;
	m.qp_state = IBV_QPS_RTR;
	m.attr_mask = IBV_QP_STATE;
	if (!qp->ud) {
		m.attr_mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			       IBV_QP_MIN_RNR_TIMER;
		memcpy(m.dest.dgid, own_gid, 16);
		m.dest.sgid_index = gidx;
		m.dest.hop_limit = 64;
		m.dest.is_global = 1;
		m.dest.port_num = 1;
		m.path_mtu = IBV_MTU_1024;
		m.dest_qp_num = dest;
		m.rq_psn = 7;
		m.max_dest_rd_atomic = 1;
		m.min_rnr_timer = 1;
	}
	err = qp_modify(fd, &m);
	if (err)
		return err;
	memset(&m, 0, sizeof(m));
	m.qp_handle = qp->h;
	m.qp_state = IBV_QPS_RTS;
	m.attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	m.sq_psn = 7;
	if (!qp->ud) {
		m.attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		m.timeout = 14;
		m.retry_cnt = 7;
		m.rnr_retry = 7;
		m.max_rd_atomic = 1;
	}
	return qp_modify(fd, &m);
}

static int mr_reg(int fd, uint32_t pd, void *addr, uint64_t len, int access,
		  uint32_t *h, uint32_t *lkey, uint32_t *rkey)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ib_uverbs_reg_mr req = {
		.response = U64(&resp), .start = U64(addr), .length = len,
		.hca_va = U64(addr), .pd_handle = pd, .access_flags = access,
	};
	int err;

	err = cmd(fd, IB_USER_VERBS_CMD_REG_MR, &req, sizeof(req),
		  sizeof(resp));
	if (!err) {
		*h = resp.mr_handle;
		if (lkey)
			*lkey = resp.lkey;
		if (rkey)
			*rkey = resp.rkey;
	}
	return err;
}

static int mr_dereg(int fd, uint32_t h)
{
	struct ib_uverbs_dereg_mr req = { .mr_handle = h };

	return cmd(fd, IB_USER_VERBS_CMD_DEREG_MR, &req, sizeof(req), 0);
}

/* An AH to this device's own address. */
static int ah_create(int fd, uint32_t pd, uint32_t *h, uint32_t *ahn)
{
	struct {
		struct ib_uverbs_create_ah c;
	} req = {};
	struct {
		struct ib_uverbs_create_ah_resp r;
		struct metaroce_create_ah_resp d;
	} resp = {};
	int err;

	req.c.response = U64(&resp);
	req.c.pd_handle = pd;
	memcpy(req.c.attr.grh.dgid, own_gid, 16);
	req.c.attr.grh.sgid_index = gidx;
	req.c.attr.grh.hop_limit = 64;
	req.c.attr.is_global = 1;
	req.c.attr.port_num = 1;
	err = cmd(fd, IB_USER_VERBS_CMD_CREATE_AH, &req, sizeof(req),
		  sizeof(resp));
	if (!err) {
		*h = resp.r.ah_handle;
		if (ahn)
			*ahn = resp.d.ahn;
	}
	return err;
}

static int ah_destroy(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_ah req = { .ah_handle = h };

	return cmd(fd, IB_USER_VERBS_CMD_DESTROY_AH, &req, sizeof(req), 0);
}

static int srq_create(int fd, uint32_t pd, uint32_t max_wr, uint32_t max_sge,
		      bool ring, uint32_t *h, struct ring *r)
{
	struct {
		struct ib_uverbs_create_srq c;
		struct metaroce_create_srq_req d;
	} req = {};
	struct {
		struct ib_uverbs_create_srq_resp r;
		struct metaroce_create_srq_resp d;
	} resp = {};
	int err;

	req.c.response = U64(&resp);
	req.c.pd_handle = pd;
	req.c.max_wr = max_wr;
	req.c.max_sge = max_sge;
	req.d.comp_mask = ring ? METAROCE_SRQ_RING : 0;
	err = cmd(fd, IB_USER_VERBS_CMD_CREATE_SRQ, &req, sizeof(req),
		  sizeof(resp));
	if (err)
		return err;
	*h = resp.r.srq_handle;
	if (r) {
		memset(r, 0, sizeof(*r));
		if (resp.d.comp_mask & METAROCE_SRQ_RING) {
			r->offset = resp.d.mmap_offset;
			r->size = resp.d.mmap_size;
			r->slots = resp.d.slots;
			r->stride = resp.d.stride;
			r->addr = map_ring(fd, r);
		}
	}
	return 0;
}

static int srq_destroy(int fd, uint32_t h)
{
	struct ib_uverbs_destroy_srq_resp resp;
	struct ib_uverbs_destroy_srq req = { .response = U64(&resp),
					     .srq_handle = h };

	return cmd(fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &req, sizeof(req),
		   sizeof(resp));
}

/* POST_SEND with no work request: a send ring's doorbell. */
static int doorbell(int fd, uint32_t qph)
{
	struct ib_uverbs_post_send_resp resp;
	struct ib_uverbs_post_send req = {
		.response = U64(&resp), .qp_handle = qph,
		.wqe_size = sizeof(struct ib_uverbs_send_wr),
	};

	return cmd(fd, IB_USER_VERBS_CMD_POST_SEND, &req, sizeof(req),
		   sizeof(resp));
}

/*
 * POST_SEND (or POST_RECV/POST_SRQ_RECV: @command) on handle @h of @n work
 * requests of @wqe_size bytes each (taken from @wrs, @wqe_size apart),
 * then @nsge SGEs: exactly what ib_core reads, nothing more. 0 or the errno.
 */
static int post_raw(int fd, uint32_t command, uint32_t h, const void *wrs,
		    uint32_t n, uint32_t wqe_size, const struct ib_uverbs_sge *sge,
		    uint32_t nsge)
{
	uint8_t buf[4096];
	struct ib_uverbs_post_send *c = (void *)buf;
	struct ib_uverbs_post_send_resp r;
	size_t len = sizeof(*c) + (size_t)n * wqe_size + nsge * sizeof(*sge);

	if (len > sizeof(buf))
		tap_bail("post_raw: %zu bytes", len);
	memset(buf, 0, sizeof(buf));
	c->response = U64(&r);
	c->qp_handle = h;
	c->wr_count = n;
	c->sge_count = nsge;
	c->wqe_size = wqe_size;
	memcpy(buf + sizeof(*c), wrs, (size_t)n * wqe_size);
	memcpy(buf + sizeof(*c) + (size_t)n * wqe_size, sge,
	       nsge * sizeof(*sge));
	return cmd(fd, command, buf, len, sizeof(r));
}

/* --- rings -------------------------------------------------------------------- */

static struct metaroce_swqe *sq_slot(struct qp *qp, uint32_t idx)
{
	return (void *)((uint8_t *)qp->sq.addr + METAROCE_SQ_RING_ENTRIES +
			(size_t)(idx & (qp->sq.slots - 1)) * qp->sq.stride);
}

/* Publish the work requests written up to qp->sq_prod; ring if asked. */
static int sq_publish(int fd, struct qp *qp)
{
	struct metaroce_sq_ring *r = qp->sq.addr;

	__atomic_store_n(&r->producer, qp->sq_prod, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->flags, __ATOMIC_RELAXED) &
	    METAROCE_SQ_NEED_WAKEUP)
		return doorbell(fd, qp->h);
	return 0;
}

/* An RDMA WRITE of @len bytes from @lkey/@addr to @rkey/@raddr. */
static struct metaroce_swqe *sq_write(struct qp *qp, uint64_t wr_id,
				      uint32_t lkey, uint64_t addr,
				      uint32_t rkey, uint64_t raddr,
				      uint32_t len)
{
	struct metaroce_swqe *w = sq_slot(qp, qp->sq_prod);
	struct metaroce_sge *s = (void *)(w + 1);

	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->rkey = rkey;
	w->remote_addr = raddr;
	s->addr = addr;
	s->length = len;
	s->lkey = lkey;
	qp->sq_prod++;
	return w;
}

/* Take the next completion from a CQ ring, if any: true and *c. */
static bool cq_take(struct cq *cq, struct metaroce_cqe *c)
{
	struct metaroce_cq_ring *r = cq->r.addr;
	uint32_t prod = __atomic_load_n(&r->producer, __ATOMIC_ACQUIRE);

	if (prod == cq->consumer)
		return false;
	*c = ((struct metaroce_cqe *)((uint8_t *)r +
				      METAROCE_CQ_RING_ENTRIES))
		[cq->consumer & (cq->r.slots - 1)];
	cq->consumer++;
	__atomic_store_n(&r->consumer, cq->consumer, __ATOMIC_RELEASE);
	return true;
}

/* The completion of @wr_id within @secs, skipping others: its status or -1. */
static int cq_wait(struct cq *cq, uint64_t wr_id, double secs)
{
	struct metaroce_cqe c;
	double end = now_s() + secs;

	while (now_s() < end) {
		if (!cq_take(cq, &c)) {
			usleep(1000);
			continue;
		}
		if (c.wr_id == wr_id)
			return c.status;
	}
	return -1;
}

/* --- a session: a context, a PD, a CQ with a ring, a buffer and its MR ----- */

struct sess {
	int fd, async_fd;
	uint32_t pd;
	struct cq cq;
	uint8_t *buf;
	size_t len;
	uint32_t mr, lkey, rkey;
};

static void sess_open(struct sess *s)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = dev_open();
	err = ctx_get(s->fd, &s->async_fd);
	if (err)
		tap_bail("GET_CONTEXT: %s", ename(err));
	err = pd_alloc(s->fd, &s->pd);
	if (err)
		tap_bail("ALLOC_PD: %s", ename(err));
	err = cq_create(s->fd, 256, true, &s->cq);
	if (err)
		tap_bail("CREATE_CQ: %s", ename(err));
	s->len = 1 << 20;
	s->buf = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memset(s->buf, 0x5a, s->len);
	err = mr_reg(s->fd, s->pd, s->buf, s->len,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ, &s->mr, &s->lkey, &s->rkey);
	if (err)
		tap_bail("REG_MR: %s", ename(err));
}

/* Closing the file destroys everything in it. */
static void sess_close(struct sess *s)
{
	if (s->cq.r.addr)
		munmap(s->cq.r.addr, s->cq.r.size);
	munmap(s->buf, s->len);
	close(s->async_fd);
	close(s->fd);
}

static const struct qp_opts rc_ring = {
	.type = IBV_QPT_RC, .wr = 64, .sge = 2, .inl = 64, .rings = true,
	.srq = ~0u,
};
static const struct qp_opts rc_plain = {
	.type = IBV_QPT_RC, .wr = 16, .sge = 2, .inl = 64, .srq = ~0u,
};

/* Two RC QPs with rings, connected to each other. */
static void pair_qps(struct sess *s, struct qp *a, struct qp *b)
{
	int err = qp_create(s->fd, s->pd, s->cq.h, &rc_ring, a);

	if (!err)
		err = qp_create(s->fd, s->pd, s->cq.h, &rc_ring, b);
	if (!err)
		err = qp_connect(s->fd, a, b->qpn);
	if (!err)
		err = qp_connect(s->fd, b, a->qpn);
	if (err)
		tap_bail("a pair of connected QPs: %s", ename(err));
}

/* An RC QP with rings, connected to itself. */
static void loop_qp(struct sess *s, struct qp *qp)
{
	int err = qp_create(s->fd, s->pd, s->cq.h, &rc_ring, qp);

	if (err)
		tap_bail("CREATE_QP with rings: %s", ename(err));
	err = qp_connect(s->fd, qp, qp->qpn);
	if (err)
		tap_bail("connecting a QP to itself: %s", ename(err));
}

/* ============================================================== commands */

/* Every write command number the kernel knows, and a few it does not. */
static void group_commands(void)
{
	struct ib_uverbs_query_device_resp qd;
	struct ib_uverbs_query_device qreq = { .response = U64(&qd) };
	struct {
		struct ib_uverbs_cmd_hdr h;
		struct ib_uverbs_ex_cmd_hdr x;
		uint8_t body[256];
	} ex;
	struct {
		struct ib_uverbs_cmd_hdr h;
		uint8_t body[256];
	} b;
	uint32_t c, pd;
	int fd, afd = -1, err, n;

	fd = dev_open();

	/* Before a context: only GET_CONTEXT makes sense. */
	err = pd_alloc(fd, &pd);
	expect(err, EINVAL, "ALLOC_PD before GET_CONTEXT");
	err = cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &qreq, sizeof(qreq),
		  sizeof(qd));
	expect(err, EINVAL, "QUERY_DEVICE before GET_CONTEXT");
	err = ctx_get(fd, &afd);
	expect(err, 0, "GET_CONTEXT");
	err = ctx_get(fd, NULL);
	expect(err, EINVAL, "GET_CONTEXT a second time");

	/* Malformed headers. */
	memset(&b, 0, sizeof(b));
	expect(raw(fd, &b, 4), EINVAL, "a write shorter than a header");
	b.h.command = IB_USER_VERBS_CMD_QUERY_DEVICE;
	b.h.in_words = 100;
	b.h.out_words = sizeof(qd) / 4;
	memcpy(b.body, &qreq, sizeof(qreq));
	expect(raw(fd, &b, sizeof(b.h) + sizeof(qreq)), EINVAL,
	       "QUERY_DEVICE whose in_words exceed the write");
	b.h.in_words = (sizeof(b.h) + sizeof(qreq)) / 4;
	b.h.out_words = 1;
	expect(raw(fd, &b, sizeof(b.h) + sizeof(qreq)), ENOSPC,
	       "QUERY_DEVICE with room for 4 bytes of response");
	b.h.in_words = sizeof(b.h) / 4;
	b.h.out_words = sizeof(qd) / 4;
	expect(raw(fd, &b, sizeof(b.h)), ENOSPC,
	       "QUERY_DEVICE without its request");
	b.h.in_words = (sizeof(b.h) + sizeof(qreq)) / 4;
	b.h.command = IB_USER_VERBS_CMD_QUERY_DEVICE | 0x40000000;
	expect(raw(fd, &b, sizeof(b.h) + sizeof(qreq)), EINVAL,
	       "a command with unknown flag bits");
	/* Responses that cannot be written. */
	qreq.response = 0;
	err = cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &qreq, sizeof(qreq),
		  sizeof(qd));
	expect(err, EFAULT, "QUERY_DEVICE with a NULL response");
	qreq.response = 0xffff888000000000ULL;
	err = cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &qreq, sizeof(qreq),
		  sizeof(qd));
	expect(err, EFAULT, "QUERY_DEVICE answering into kernel memory");
	qreq.response = U64(&qd);
	err = cmd(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &qreq, sizeof(qreq),
		  sizeof(qd));
	expect(err, 0, "QUERY_DEVICE");

	/*
	 * Every command number with an empty body: refused for its size
	 * (ENOSPC), or as one the device does not have (EOPNOTSUPP), never
	 * carried out. The numbers past the table too.
	 */
	for (c = 0; c < 64; c++) {
		bool known = c <= IB_USER_VERBS_CMD_OPEN_QP;
		bool has_op;

		/* Those the device lacks: their own EOPNOTSUPP check below. */
		switch (c) {
		case IB_USER_VERBS_CMD_MODIFY_AH:
		case IB_USER_VERBS_CMD_QUERY_AH:
		case IB_USER_VERBS_CMD_REG_SMR:
		case IB_USER_VERBS_CMD_QUERY_MR:
		case IB_USER_VERBS_CMD_ALLOC_MW:
		case IB_USER_VERBS_CMD_BIND_MW:
		case IB_USER_VERBS_CMD_DEALLOC_MW:
		case IB_USER_VERBS_CMD_PEEK_CQ:
		case IB_USER_VERBS_CMD_OPEN_XRCD:
		case IB_USER_VERBS_CMD_CLOSE_XRCD:
		case IB_USER_VERBS_CMD_OPEN_QP:
			has_op = false;
			break;
		default:
			has_op = known;
		}
		memset(&b, 0, sizeof(b));
		b.h.command = c;
		b.h.in_words = sizeof(b.h) / 4;
		err = raw(fd, &b, sizeof(b.h));
		if (has_op)
			expect(err, ENOSPC, "command %u with no body", c);
		else
			expect(err, EOPNOTSUPP,
			       "command %u, which the device does not have", c);
	}
	/* Extended commands: headers that lie. */
	memset(&ex, 0, sizeof(ex));
	ex.h.command = IB_USER_VERBS_CMD_FLAG_EXTENDED |
		       IB_USER_VERBS_EX_CMD_QUERY_DEVICE;
	ex.h.in_words = 1;
	ex.h.out_words = 4;
	ex.x.response = U64(ex.body + 128);
	n = sizeof(ex.h) + sizeof(ex.x) + 8;
	expect(raw(fd, &ex, n), 0, "QUERY_DEVICE_EX");
	ex.x.cmd_hdr_reserved = 1;
	expect(raw(fd, &ex, n), EINVAL, "QUERY_DEVICE_EX with a reserved word set");
	ex.x.cmd_hdr_reserved = 0;
	ex.x.provider_in_words = 3;
	expect(raw(fd, &ex, n), EINVAL,
	       "QUERY_DEVICE_EX whose provider words exceed the write");
	ex.x.provider_in_words = 0;
	ex.x.response = 0;
	expect(raw(fd, &ex, n), EINVAL,
	       "QUERY_DEVICE_EX with response words and no response");
	ex.x.response = 0xffff888000000000ULL;
	expect(raw(fd, &ex, n), EFAULT,
	       "QUERY_DEVICE_EX answering into kernel memory");
	ex.x.response = U64(ex.body + 128);
	expect(raw(fd, &ex, sizeof(ex.h)), EINVAL,
	       "an extended command without its extended header");
	for (c = IB_USER_VERBS_EX_CMD_CREATE_FLOW;
	     c <= IB_USER_VERBS_EX_CMD_MODIFY_CQ + 4; c++) {
		memset(&ex, 0, sizeof(ex));
		ex.h.command = IB_USER_VERBS_CMD_FLAG_EXTENDED | c;
		n = sizeof(ex.h) + sizeof(ex.x);
		expect(raw(fd, &ex, n), EOPNOTSUPP,
		       "extended command %u, which the device does not have",
		       c);
	}
	/* Still usable after all that. */
	err = pd_alloc(fd, &pd);
	expect(err, 0, "ALLOC_PD after the misuse");
	if (!err)
		expect(pd_free(fd, pd), 0, "DEALLOC_PD");
	if (afd >= 0)
		close(afd);
	close(fd);
}

/* ============================================================== requests */

static void group_requests(void)
{
	struct sess s;
	int err;

	sess_open(&s);

	/* GET_CONTEXT's driver request, on fresh files. */
	{
		struct {
			struct ib_uverbs_get_context c;
			uint32_t d[4];
		} req = {};
		struct {
			struct ib_uverbs_get_context_resp r;
			struct metaroce_alloc_ucontext_resp d;
		} resp;
		int fd = dev_open();

		req.c.response = U64(&resp);
		req.d[0] = 1 << 5;
		err = cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req,
			  sizeof(req.c) + 8, sizeof(resp));
		expect(err, EOPNOTSUPP, "GET_CONTEXT asking for an unknown feature");
		req.d[0] = 0;
		req.d[1] = 1;
		err = cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req,
			  sizeof(req.c) + 8, sizeof(resp));
		expect(err, EINVAL, "GET_CONTEXT with its reserved word set");
		req.d[1] = 0;
		req.d[3] = 9;
		err = cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req,
			  sizeof(req), sizeof(resp));
		expect(err, EOPNOTSUPP,
		       "GET_CONTEXT with a longer request that is not zeroes");
		req.d[3] = 0;
		err = cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &req,
			  sizeof(req), sizeof(resp));
		expect(err, 0, "GET_CONTEXT with a longer request of zeroes");
		close(resp.r.async_fd);
		close(fd);
	}

	/* PDs, AHs and MRs take no driver request. */
	{
		struct {
			struct ib_uverbs_alloc_pd c;
			uint64_t d;
		} req = { .d = 1 };
		struct {
			struct ib_uverbs_alloc_pd_resp r;
			struct metaroce_alloc_pd_resp d;
		} resp;

		req.c.response = U64(&resp);
		err = cmd(s.fd, IB_USER_VERBS_CMD_ALLOC_PD, &req, sizeof(req),
			  sizeof(resp));
		expect(err, EOPNOTSUPP, "ALLOC_PD with a driver request");
	}
	{
		struct {
			struct ib_uverbs_reg_mr c;
			uint64_t d;
		} req = {};
		struct ib_uverbs_reg_mr_resp resp;

		req.c.response = U64(&resp);
		req.c.start = req.c.hca_va = U64(s.buf);
		req.c.length = 4096;
		req.c.pd_handle = s.pd;
		req.c.access_flags = IBV_ACCESS_LOCAL_WRITE;
		req.d = 3;
		err = cmd(s.fd, IB_USER_VERBS_CMD_REG_MR, &req, sizeof(req),
			  sizeof(resp));
		expect(err, EOPNOTSUPP, "REG_MR with a driver request");
	}

	/* CQs. */
	{
		struct {
			struct ib_uverbs_create_cq c;
			struct metaroce_create_cq_req d;
			uint64_t more;
		} req = {};
		struct {
			struct ib_uverbs_create_cq_resp r;
			struct metaroce_create_cq_resp d;
		} resp;
		size_t base = sizeof(req.c) + sizeof(req.d);
		struct cq cq;

		req.c.response = U64(&resp);
		req.c.cqe = 16;
		req.c.comp_channel = -1;
		req.d.comp_mask = 1 << 7;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EOPNOTSUPP, "CREATE_CQ asking for an unknown feature");
		req.d.comp_mask = 0;
		req.d.reserved = 1;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EINVAL, "CREATE_CQ with its reserved word set");
		req.d.reserved = 0;
		req.more = 1;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, sizeof(req),
			  sizeof(resp));
		expect(err, EOPNOTSUPP,
		       "CREATE_CQ with a longer request that is not zeroes");
		req.more = 0;
		req.d.comp_mask = METAROCE_CQ_RING;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp.r) + 8);
		expect(err, EINVAL,
		       "CREATE_CQ asking for a ring without room for its answer");
		req.d.comp_mask = 0;
		req.c.cqe = 0;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EINVAL, "CREATE_CQ with 0 entries");
		req.c.cqe = 65536;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EINVAL, "CREATE_CQ with max_cqe + 1 entries");
		req.c.cqe = 0xffffffff;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EINVAL, "CREATE_CQ with 2^32 - 1 entries");
		req.c.cqe = 16;
		req.c.comp_vector = 1;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EINVAL, "CREATE_CQ on a completion vector it lacks");
		req.c.comp_vector = 0;
		req.c.comp_channel = 1000;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EBADF, "CREATE_CQ with a channel that is no file");
		req.c.comp_channel = s.fd;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EBADF, "CREATE_CQ with a channel that is no channel");
		req.c.comp_channel = -1;
		req.c.response = 1;
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_CQ, &req, base,
			  sizeof(resp));
		expect(err, EFAULT, "CREATE_CQ whose response cannot be written");

		/* Resizing, and polling a CQ with a ring. */
		err = cq_create(s.fd, 16, false, &cq);
		expect(err, 0, "CREATE_CQ without a ring");
		if (!err) {
			struct ib_uverbs_resize_cq_resp rr;
			struct {
				struct ib_uverbs_resize_cq c;
				struct metaroce_create_cq_req d;
			} rq = { .c = { .response = U64(&rr), .cq_handle = cq.h } };
			struct {
				struct ib_uverbs_poll_cq c;
			} pq = { .c = { .cq_handle = cq.h, .ne = 0xffffffff } };
			uint8_t pr[64];

			rq.c.cqe = 0;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &rq,
				   sizeof(rq.c), sizeof(rr)), EINVAL,
			       "RESIZE_CQ to 0");
			rq.c.cqe = 65536;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &rq,
				   sizeof(rq.c), sizeof(rr)), EINVAL,
			       "RESIZE_CQ to max_cqe + 1");
			rq.c.cqe = 32;
			rq.d.comp_mask = METAROCE_CQ_RING;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &rq,
				   sizeof(rq), sizeof(rr)), EINVAL,
			       "RESIZE_CQ asking a CQ without a ring for one");
			pq.c.response = U64(pr);
			expect(cmd(s.fd, IB_USER_VERBS_CMD_POLL_CQ, &pq,
				   sizeof(pq), 8), 0,
			       "POLL_CQ of 2^32 - 1 completions, none there");
			expect(cq_destroy(s.fd, cq.h), 0, "DESTROY_CQ");
		}
		{
			struct ib_uverbs_poll_cq pq = { .cq_handle = s.cq.h,
							.ne = 4 };
			uint8_t pr[256];

			pq.response = U64(pr);
			expect(cmd(s.fd, IB_USER_VERBS_CMD_POLL_CQ, &pq,
				   sizeof(pq), sizeof(pr)), EINVAL,
			       "POLL_CQ of a CQ with a ring");
		}
	}

	/* QPs. */
	{
		struct qp_opts o = rc_plain;
		struct qp qp;

		o.wr = 16385;
		expect(qp_create(s.fd, s.pd, s.cq.h, &o, &qp), EINVAL,
		       "CREATE_QP with max_qp_wr + 1 work requests");
		o = rc_plain;
		o.wr = 0xffffffff;
		expect(qp_create(s.fd, s.pd, s.cq.h, &o, &qp), EINVAL,
		       "CREATE_QP with 2^32 - 1 work requests");
		o = rc_plain;
		o.sge = 17;
		expect(qp_create(s.fd, s.pd, s.cq.h, &o, &qp), EINVAL,
		       "CREATE_QP with max_sge + 1 SGEs");
		o = rc_plain;
		o.inl = 257;
		expect(qp_create(s.fd, s.pd, s.cq.h, &o, &qp), EINVAL,
		       "CREATE_QP with 257 bytes of inline data");
		o = rc_plain;
		o.type = IBV_QPT_UC;
		expect(qp_create(s.fd, s.pd, s.cq.h, &o, &qp), EOPNOTSUPP,
		       "CREATE_QP of a UC QP");
		o.type = 200;
		expect(qp_create(s.fd, s.pd, s.cq.h, &o, &qp), EINVAL,
		       "CREATE_QP of QP type 200");
		o = rc_plain;
		o.srq = 12345;
		EXPECT_GONE(qp_create(s.fd, s.pd, s.cq.h, &o, &qp),
			    "CREATE_QP with an SRQ handle that names nothing");
	}
	{
		struct {
			struct ib_uverbs_create_qp c;
			struct metaroce_create_qp_req d;
		} req = {};
		struct {
			struct ib_uverbs_create_qp_resp r;
			struct metaroce_create_qp_resp d;
		} resp;

		req.c.response = U64(&resp);
		req.c.pd_handle = s.pd;
		req.c.send_cq_handle = req.c.recv_cq_handle = s.cq.h;
		req.c.max_send_wr = req.c.max_recv_wr = 4;
		req.c.max_send_sge = req.c.max_recv_sge = 1;
		req.c.qp_type = IBV_QPT_RC;
		req.d.comp_mask = 1 << 9;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_CREATE_QP, &req, sizeof(req),
			   sizeof(resp)), EOPNOTSUPP,
		       "CREATE_QP asking for an unknown feature");
		req.d.comp_mask = 0;
		req.d.reserved = 2;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_CREATE_QP, &req, sizeof(req),
			   sizeof(resp)), EINVAL,
		       "CREATE_QP with its reserved word set");
		req.d.reserved = 0;
		req.d.comp_mask = METAROCE_QP_SQ_RING | METAROCE_QP_RQ_RING;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_CREATE_QP, &req, sizeof(req),
			   sizeof(resp.r) + 24), EINVAL,
		       "CREATE_QP asking for rings without room for the answer");
		req.c.response = 0x10;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_CREATE_QP, &req, sizeof(req),
			   sizeof(resp)), EFAULT,
		       "CREATE_QP with rings whose response cannot be written");
	}

	/* Work requests through POST_SEND and POST_RECV. */
	{
		struct ib_uverbs_send_wr w = {};
		struct ib_uverbs_recv_wr rw = {};
		struct ib_uverbs_sge sg[20] = {};
		struct qp qp;
		uint8_t big[2][sizeof(w) + 8];
		const uint32_t ps = IB_USER_VERBS_CMD_POST_SEND;

		err = qp_create(s.fd, s.pd, s.cq.h, &rc_plain, &qp);
		if (err)
			tap_bail("CREATE_QP: %s", ename(err));
		err = qp_connect(s.fd, &qp, qp.qpn);
		if (err)
			tap_bail("connecting: %s", ename(err));
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = U64(s.buf + 4096);
		w.wr.rdma.rkey = s.rkey;
		sg[0].addr = U64(s.buf);
		sg[0].length = 64;
		sg[0].lkey = s.lkey;
		{
			struct {
				struct ib_uverbs_post_send c;
				struct ib_uverbs_send_wr w;
			} one = { .c = { .qp_handle = qp.h, .wr_count = 1000000,
					 .wqe_size = sizeof(w) }, .w = w };
			struct ib_uverbs_post_send_resp r;

			one.c.response = U64(&r);
			expect(cmd(s.fd, ps, &one, sizeof(one), sizeof(r)),
			       ENOSPC,
			       "POST_SEND of a million work requests, one written");
			one.c.wr_count = 1;
			one.c.wqe_size = 0x40000000;
			expect(cmd(s.fd, ps, &one, sizeof(one), sizeof(r)),
			       ENOSPC, "POST_SEND of a 1 GiB work request");
		}
		expect(post_raw(s.fd, ps, qp.h, &w, 1, 8, sg, 1), EINVAL,
		       "POST_SEND of 8-byte work requests");
		/* A longer work request is fine if what follows is zeroes. */
		memset(big, 0, sizeof(big));
		memcpy(big[0], &w, sizeof(w));
		big[0][sizeof(w)] = 1;
		expect(post_raw(s.fd, ps, qp.h, big, 1, sizeof(big[0]), sg, 1),
		       0, "POST_SEND of a longer work request (its tail ignored)");
		w.num_sge = 2;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EINVAL,
		       "POST_SEND with more SGEs than it carries");
		w.num_sge = 17;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 17),
		       EINVAL, "POST_SEND with more SGEs than the QP has");
		w.num_sge = 1;
		w.opcode = 99;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EINVAL,
		       "POST_SEND with opcode 99");
		w.opcode = IBV_WR_BIND_MW;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EINVAL,
		       "POST_SEND of a memory window bind");
		w.opcode = IBV_WR_LOCAL_INV;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EINVAL,
		       "POST_SEND of a local invalidate (kernel QPs only)");
		w.opcode = IBV_WR_RDMA_WRITE;
		w.send_flags = IBV_SEND_INLINE;
		sg[0].length = 65;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EINVAL,
		       "POST_SEND of 65 inline bytes to a QP of 64");
		sg[0].addr = 0xffff888000000000ULL;
		sg[0].length = 8;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EFAULT,
		       "POST_SEND of inline bytes from kernel memory");
		sg[0].addr = U64(s.buf);
		sg[0].length = 64;
		w.send_flags = 0;
		w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		w.wr.atomic.remote_addr = U64(s.buf + 3);
		w.wr.atomic.rkey = s.rkey;
		sg[0].length = 8;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), EINVAL,
		       "POST_SEND of an atomic at an unaligned address");
		sg[0].length = 64;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = U64(s.buf + 4096);
		w.wr.rdma.rkey = s.rkey;
		w.send_flags = IBV_SEND_SIGNALED;
		w.wr_id = 77;
		expect(post_raw(s.fd, ps, qp.h, &w, 1, sizeof(w), sg, 1), 0,
		       "POST_SEND of a good WRITE after those");

		rw.num_sge = 17;
		expect(post_raw(s.fd, IB_USER_VERBS_CMD_POST_RECV, qp.h, &rw, 1,
				sizeof(rw), sg, 17), EINVAL,
		       "POST_RECV with more SGEs than the QP has");
		rw.num_sge = 1;
		expect(post_raw(s.fd, IB_USER_VERBS_CMD_POST_RECV, qp.h, &rw, 1,
				4, sg, 1), EINVAL,
		       "POST_RECV of 4-byte work requests");
		expect(post_raw(s.fd, IB_USER_VERBS_CMD_POST_RECV, qp.h, &rw, 1,
				sizeof(rw), sg, 1), 0, "POST_RECV of a good one");

		/* QP attributes. */
		{
			struct ib_uverbs_modify_qp m = { .qp_handle = qp.h };

			m.attr_mask = 1 << 25;
			expect(qp_modify(s.fd, &m), EOPNOTSUPP,
			       "MODIFY_QP with an unknown attribute bit");
			m.attr_mask = IBV_QP_STATE;
			m.qp_state = 99;
			expect(qp_modify(s.fd, &m), EINVAL,
			       "MODIFY_QP to state 99");
			m.attr_mask = IBV_QP_PORT;
			m.port_num = 2;
			expect(qp_modify(s.fd, &m), EINVAL,
			       "MODIFY_QP to port 2");
			m.attr_mask = IBV_QP_PATH_MTU;
			m.path_mtu = 9;
			expect(qp_modify(s.fd, &m), EINVAL,
			       "MODIFY_QP to path MTU 9");
			m.attr_mask = IBV_QP_TIMEOUT;
			m.timeout = 200;
			expect(qp_modify(s.fd, &m), EINVAL,
			       "MODIFY_QP to timeout 200");
			m.attr_mask = IBV_QP_CAP;
			expect(qp_modify(s.fd, &m), EINVAL,
			       "MODIFY_QP of the capabilities");
			m.attr_mask = IBV_QP_STATE;
			m.qp_state = IBV_QPS_RTR;
			m.cur_qp_state = IBV_QPS_RESET;
			m.attr_mask |= IBV_QP_CUR_STATE;
			expect(qp_modify(s.fd, &m), EINVAL,
			       "MODIFY_QP from a current state that is not");
		}
		/* A QP that went back to RESET: its number stays, traffic works. */
		expect(qp_state(s.fd, qp.h, IBV_QPS_RESET), 0,
		       "MODIFY_QP to RESET");
		expect(qp_connect(s.fd, &qp, qp.qpn), 0,
		       "connecting the reset QP again");
		expect(qp_destroy(s.fd, qp.h), 0, "DESTROY_QP");
	}

	/* SRQs. */
	{
		uint32_t h;
		struct {
			struct ib_uverbs_modify_srq c;
		} ms = {};

		expect(srq_create(s.fd, s.pd, 0, 1, false, &h, NULL), EINVAL,
		       "CREATE_SRQ of 0 work requests");
		expect(srq_create(s.fd, s.pd, 16385, 1, false, &h, NULL), EINVAL,
		       "CREATE_SRQ of max_srq_wr + 1 work requests");
		expect(srq_create(s.fd, s.pd, 16, 17, false, &h, NULL), EINVAL,
		       "CREATE_SRQ of max_srq_sge + 1 SGEs");
		err = srq_create(s.fd, s.pd, 16, 1, false, &h, NULL);
		expect(err, 0, "CREATE_SRQ");
		if (!err) {
			ms.c.srq_handle = h;
			ms.c.attr_mask = IBV_SRQ_MAX_WR;
			ms.c.max_wr = 0xffffffff;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &ms,
				   sizeof(ms), 0), EINVAL,
			       "MODIFY_SRQ to 2^32 - 1 work requests");
			ms.c.attr_mask = IBV_SRQ_LIMIT;
			ms.c.srq_limit = 1000;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &ms,
				   sizeof(ms), 0), EINVAL,
			       "MODIFY_SRQ to a limit past its size");
			ms.c.attr_mask = 1 << 5;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_MODIFY_SRQ, &ms,
				   sizeof(ms), 0), EINVAL,
			       "MODIFY_SRQ of an unknown attribute");
			expect(srq_destroy(s.fd, h), 0, "DESTROY_SRQ");
		}
	}

	/* MRs. */
	{
		uint32_t h;
		void *hole;

		expect(mr_reg(s.fd, s.pd, s.buf, 0, IBV_ACCESS_LOCAL_WRITE, &h,
			      NULL, NULL), EINVAL, "REG_MR of 0 bytes");
		expect(mr_reg(s.fd, s.pd, s.buf, 1ULL << 41,
			      IBV_ACCESS_LOCAL_WRITE, &h, NULL, NULL), EINVAL,
		       "REG_MR of max_mr_size * 2");
		/* Bits 20-29 are optional hints; 10-19 mean nothing. */
		expect(mr_reg(s.fd, s.pd, s.buf, 4096, 1 << 15, &h, NULL, NULL),
		       EINVAL, "REG_MR with an unknown access bit");
		expect(mr_reg(s.fd, s.pd, (void *)(uintptr_t)0xffff888000000000ULL,
			      4096, IBV_ACCESS_LOCAL_WRITE, &h, NULL, NULL),
		       EFAULT, "REG_MR of kernel memory");
		hole = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		expect(mr_reg(s.fd, s.pd, hole, 8192, IBV_ACCESS_LOCAL_WRITE, &h,
			      NULL, NULL), EFAULT,
		       "REG_MR of memory without access");
		munmap(hole, 8192);
		expect(mr_reg(s.fd, s.pd, (void *)(~0ULL - 4095), 8192,
			      IBV_ACCESS_LOCAL_WRITE, &h, NULL, NULL), EINVAL,
		       "REG_MR that wraps around the address space");
	}

	/* The other commands' arguments. */
	{
		struct ib_uverbs_query_port_resp pr;
		struct ib_uverbs_query_port qp = { .response = U64(&pr) };
		struct ib_uverbs_rereg_mr_resp rr;
		struct ib_uverbs_rereg_mr rm = {
			.response = U64(&rr), .mr_handle = s.mr,
			.start = U64(s.buf), .length = 4096,
			.hca_va = U64(s.buf), .pd_handle = s.pd,
			.access_flags = IBV_ACCESS_LOCAL_WRITE,
		};
		struct ib_uverbs_req_notify_cq rn = { .cq_handle = s.cq.h };
		struct ib_uverbs_create_comp_channel_resp ccr;
		struct ib_uverbs_create_comp_channel cc = {
			.response = U64(&ccr) };
		struct ib_uverbs_query_srq_resp qsr;
		struct ib_uverbs_query_srq qs = { .response = U64(&qsr) };
		struct ib_uverbs_recv_wr rw = { .num_sge = 3 };
		struct ib_uverbs_sge sg[3] = {};
		uint32_t srq;

		expect(cmd(s.fd, IB_USER_VERBS_CMD_QUERY_PORT, &qp, sizeof(qp),
			   sizeof(pr)), EINVAL, "QUERY_PORT of port 0");
		qp.port_num = 2;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_QUERY_PORT, &qp, sizeof(qp),
			   sizeof(pr)), EINVAL, "QUERY_PORT of port 2");
		qp.port_num = 1;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_QUERY_PORT, &qp, sizeof(qp),
			   sizeof(pr)), 0, "QUERY_PORT of port 1");
		rm.flags = 0;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_REREG_MR, &rm, sizeof(rm),
			   sizeof(rr)), EINVAL, "REREG_MR changing nothing");
		rm.flags = 1 << 7;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_REREG_MR, &rm, sizeof(rm),
			   sizeof(rr)), EOPNOTSUPP, "REREG_MR with an unknown flag");
		rm.flags = IBV_REREG_MR_CHANGE_ACCESS;
		rm.access_flags = IBV_ACCESS_REMOTE_WRITE;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_REREG_MR, &rm, sizeof(rm),
			   sizeof(rr)), EINVAL,
		       "REREG_MR to remote write without local write");
		rm.access_flags = IBV_ACCESS_LOCAL_WRITE;
		rm.flags = IBV_REREG_MR_CHANGE_TRANSLATION;
		rm.length = 0;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_REREG_MR, &rm, sizeof(rm),
			   sizeof(rr)), EINVAL, "REREG_MR to 0 bytes");
		rm.length = 4096;
		rm.mr_handle = 0xabcdef;
		EXPECT_GONE(cmd(s.fd, IB_USER_VERBS_CMD_REREG_MR, &rm,
				sizeof(rm), sizeof(rr)),
			    "REREG_MR of a handle that names nothing");
		rn.solicited_only = 7;
		expect(cmd(s.fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &rn,
			   sizeof(rn), 0), 0,
		       "REQ_NOTIFY_CQ with solicited_only 7 (any non-zero)");
		rn.cq_handle = 0x7777;
		EXPECT_GONE(cmd(s.fd, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &rn,
				sizeof(rn), 0),
			    "REQ_NOTIFY_CQ of a CQ that does not exist");
		err = cmd(s.fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, &cc,
			  sizeof(cc), sizeof(ccr));
		expect(err, 0, "CREATE_COMP_CHANNEL");
		if (!err)
			close(ccr.fd);
		err = srq_create(s.fd, s.pd, 16, 2, false, &srq, NULL);
		expect(err, 0, "CREATE_SRQ of 2 SGEs");
		if (!err) {
			expect(post_raw(s.fd, IB_USER_VERBS_CMD_POST_SRQ_RECV, srq,
					&rw, 1, sizeof(rw), sg, 3), EINVAL,
			       "POST_SRQ_RECV of 3 SGEs");
			rw.num_sge = 2;
			sg[0].length = 0x80000000;
			sg[1].length = 0x80000000;
			expect(post_raw(s.fd, IB_USER_VERBS_CMD_POST_SRQ_RECV, srq,
					&rw, 1, sizeof(rw), sg, 2), EINVAL,
			       "POST_SRQ_RECV whose lengths overflow 32 bits");
			qs.srq_handle = srq;
			expect(cmd(s.fd, IB_USER_VERBS_CMD_QUERY_SRQ, &qs,
				   sizeof(qs), sizeof(qsr)), 0, "QUERY_SRQ");
			srq_destroy(s.fd, srq);
			EXPECT_GONE(cmd(s.fd, IB_USER_VERBS_CMD_QUERY_SRQ, &qs,
					sizeof(qs), sizeof(qsr)),
				    "QUERY_SRQ of a destroyed SRQ");
		}
	}

	/* The misused session still works end to end. */
	{
		struct qp qp;
		int st;

		loop_qp(&s, &qp);
		sq_write(&qp, 1001, s.lkey, U64(s.buf), s.rkey,
			 U64(s.buf + 65536), 4096);
		expect(sq_publish(s.fd, &qp), 0, "a WRITE through the send ring");
		st = cq_wait(&s.cq, 1001, 10);
		tap_ok(st == IBV_WC_SUCCESS, "... completes with success (%d)", st);
		expect(qp_destroy(s.fd, qp.h), 0, "DESTROY_QP");
	}
	sess_close(&s);
}

/* =============================================================== handles */

/* A child's verdicts travel to the parent as "ok|not ok TEXT" lines. */
static int child_pipe = -1;

static void child_tap(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void child_tap(bool ok, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s ", ok ? "ok" : "no");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(child_pipe, line, n) < 0)
		_exit(99);
}

static void child_expect(int got, int want, const char *what)
{
	child_tap(got == want, "%s: %s (expected %s)", what, ename(got),
		  ename(want));
}

/*
 * Run @fn in a child process, whose verdicts become ours; it must exit
 * with @status (or be killed by signal -@status).
 */
static void in_child(void (*fn)(void *), void *arg, int status,
		     const char *what)
{
	char buf[8192], *line, *save;
	size_t got = 0;
	int p[2], ws;
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		tap_bail("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (!pid) {
		close(p[0]);
		child_pipe = p[1];
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	close(p[0]);
	buf[got] = 0;
	waitpid(pid, &ws, 0);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		tap_ok(!strncmp(line, "ok ", 3), "%s: %s", what, line + 3);
	if (status >= 0)
		tap_ok(WIFEXITED(ws) && WEXITSTATUS(ws) == status,
		       "%s: exited with %d (status %#x)", what, status, ws);
	else
		tap_ok(WIFSIGNALED(ws) && WTERMSIG(ws) == -status,
		       "%s: killed by signal %d (status %#x)", what, -status, ws);
}

/*
 * What another process holds, for a child to try: handles, keys and
 * mmap offsets that the child's own objects do not have (it makes fewer).
 */
struct theirs {
	uint32_t qp, mr, lkey, rkey, ahn, ah;
	uint64_t sq_offset, sq_size;
	uint64_t addr;
};

/* A process of its own, with the parent's numbers. */
static void stranger(void *arg)
{
	const struct theirs *t = arg;
	struct qp qp, qp2;
	struct sess s;
	int err, st;
	void *p;

	sess_open(&s);
	/* Handles are per file: its numbers name nothing here. */
	err = qp_destroy(s.fd, t->qp);
	child_tap(err == ENOENT || err == EINVAL,
		  "DESTROY_QP of another process's QP handle: %s", ename(err));
	err = mr_dereg(s.fd, t->mr);
	child_tap(err == ENOENT || err == EINVAL,
		  "DEREG_MR of another process's MR handle: %s", ename(err));
	err = ah_destroy(s.fd, t->ah);
	child_tap(err == ENOENT || err == EINVAL,
		  "DESTROY_AH of another process's AH handle: %s", ename(err));
	/* Its mmap offsets are not ours either. */
	p = mmap(NULL, t->sq_size, PROT_READ, MAP_SHARED, s.fd, t->sq_offset);
	err = p == MAP_FAILED ? errno : 0;
	child_expect(err, EINVAL, "mmap of another process's send ring offset");
	if (p != MAP_FAILED)
		munmap(p, t->sq_size);
	/* Its keys: a WRITE of ours from its lkey, or into its rkey. */
	pair_qps(&s, &qp, &qp2);
	sq_write(&qp, 1, t->lkey, t->addr, s.rkey, U64(s.buf), 64);
	sq_publish(s.fd, &qp);
	st = cq_wait(&s.cq, 1, 10);
	child_tap(st == IBV_WC_LOC_PROT_ERR,
		  "a WRITE from another process's lkey: status %d (LOC_PROT_ERR %d expected)",
		  st, IBV_WC_LOC_PROT_ERR);
	qp_destroy(s.fd, qp.h);
	qp_destroy(s.fd, qp2.h);
	pair_qps(&s, &qp, &qp2);
	sq_write(&qp, 2, s.lkey, U64(s.buf), t->rkey, t->addr, 64);
	sq_publish(s.fd, &qp);
	st = cq_wait(&s.cq, 2, 10);
	child_tap(st == IBV_WC_REM_ACCESS_ERR,
		  "a WRITE into another process's rkey: status %d (REM_ACCESS_ERR %d expected)",
		  st, IBV_WC_REM_ACCESS_ERR);
	qp_destroy(s.fd, qp.h);
	qp_destroy(s.fd, qp2.h);
	/* Its AH number, in a UD send ring of ours. */
	{
		struct qp_opts o = { .type = IBV_QPT_UD, .wr = 16, .sge = 1,
				     .rings = true, .srq = ~0u };
		struct metaroce_swqe *w;

		err = qp_create(s.fd, s.pd, s.cq.h, &o, &qp);
		if (!err)
			err = qp_connect(s.fd, &qp, 0);
		child_expect(err, 0, "a UD QP with rings");
		if (!err) {
			w = sq_slot(&qp, qp.sq_prod++);
			memset(w, 0, sizeof(*w));
			w->wr_id = 3;
			w->opcode = IBV_WR_SEND;
			w->send_flags = IBV_SEND_SIGNALED;
			w->ud.ahn = t->ahn;
			w->ud.remote_qpn = qp.qpn;
			w->ud.remote_qkey = 0x11111111;
			sq_publish(s.fd, &qp);
			st = cq_wait(&s.cq, 3, 10);
			child_tap(st == IBV_WC_LOC_QP_OP_ERR,
				  "a UD send naming another process's AH: status %d (LOC_QP_OP_ERR %d expected)",
				  st, IBV_WC_LOC_QP_OP_ERR);
			qp_destroy(s.fd, qp.h);
		}
	}
	sess_close(&s);
}

/*
 * The inherited file: a child of fork() has credentials of its own (a new
 * struct cred, even with the same IDs), and the write() interface refuses
 * a file opened under other credentials (ib_safe_file_access()).
 */
static void heir(void *arg)
{
	struct sess *s = arg;
	uint32_t pd;

	child_expect(pd_alloc(s->fd, &pd), EACCES,
		     "ALLOC_PD on the file inherited through fork()");
	child_expect(doorbell(s->fd, 0), EACCES,
		     "POST_SEND on the inherited file");
}

static void group_handles(void)
{
	struct theirs t = {};
	struct qp qp, qp2;
	struct sess s;
	/* Handles that name nothing until the calls that set them succeed. */
	uint32_t pd2 = UINT32_MAX, mr2 = UINT32_MAX, h;
	int err;

	sess_open(&s);
	err = qp_create(s.fd, s.pd, s.cq.h, &rc_plain, &qp);
	if (err)
		tap_bail("CREATE_QP: %s", ename(err));

	/* Handles of the wrong type, or of nothing. */
	{
		struct qp_opts o = rc_plain;

		expect(qp_create(s.fd, s.cq.h == s.pd ? s.pd + 1 : s.cq.h,
				 s.pd == s.cq.h ? s.cq.h : s.pd, &o, &qp2),
		       s.cq.h == s.pd ? EINVAL : EINVAL,
		       "CREATE_QP with a CQ handle as its PD");
		EXPECT_GONE(qp_create(s.fd, s.pd, qp.h + 7777, &o, &qp2),
			    "CREATE_QP with a CQ handle that names nothing");
		EXPECT_GONE(cq_destroy(s.fd, s.pd + 5000),
			    "DESTROY_CQ of a handle that names nothing");
		EXPECT_GONE(pd_free(s.fd, 0xffffffff),
			    "DEALLOC_PD of handle 2^32 - 1");
		EXPECT_GONE(mr_reg(s.fd, 0xfffffff0, s.buf, 4096,
				   IBV_ACCESS_LOCAL_WRITE, &h, NULL, NULL),
			    "REG_MR on a PD handle that names nothing");
	}
	/* In use. */
	expect(pd_alloc(s.fd, &pd2), 0, "ALLOC_PD");
	expect(mr_reg(s.fd, pd2, s.buf, 4096, IBV_ACCESS_LOCAL_WRITE, &mr2,
		      NULL, NULL), 0, "REG_MR on it");
	expect(pd_free(s.fd, pd2), EBUSY, "DEALLOC_PD of a PD with an MR");
	expect(cq_destroy(s.fd, s.cq.h), EBUSY, "DESTROY_CQ of a CQ with a QP");
	{
		uint32_t srq;
		struct qp_opts o = rc_plain;

		err = srq_create(s.fd, s.pd, 16, 1, false, &srq, NULL);
		expect(err, 0, "CREATE_SRQ");
		o.srq = srq;
		err = qp_create(s.fd, s.pd, s.cq.h, &o, &qp2);
		expect(err, 0, "CREATE_QP on it");
		expect(srq_destroy(s.fd, srq), EBUSY,
		       "DESTROY_SRQ of an SRQ with a QP");
		if (!err)
			expect(qp_destroy(s.fd, qp2.h), 0, "DESTROY_QP");
		expect(srq_destroy(s.fd, srq), 0, "DESTROY_SRQ once the QP went");
		EXPECT_GONE(srq_destroy(s.fd, srq), "DESTROY_SRQ again");
	}
	/* Destroyed, then used. */
	expect(mr_dereg(s.fd, mr2), 0, "DEREG_MR");
	EXPECT_GONE(mr_dereg(s.fd, mr2), "DEREG_MR again");
	expect(pd_free(s.fd, pd2), 0, "DEALLOC_PD");
	EXPECT_GONE(pd_free(s.fd, pd2), "DEALLOC_PD again");
	EXPECT_GONE(mr_reg(s.fd, pd2, s.buf, 4096, IBV_ACCESS_LOCAL_WRITE, &h,
			   NULL, NULL), "REG_MR on a PD that is gone");
	expect(qp_destroy(s.fd, qp.h), 0, "DESTROY_QP");
	EXPECT_GONE(qp_destroy(s.fd, qp.h), "DESTROY_QP again");
	EXPECT_GONE(qp_state(s.fd, qp.h, IBV_QPS_INIT),
		    "MODIFY_QP of a QP that is gone");
	EXPECT_GONE(doorbell(s.fd, qp.h), "POST_SEND on a QP that is gone");

	/* Another process, with our numbers. */
	loop_qp(&s, &qp);
	t.qp = qp.h;
	t.addr = U64(s.buf);
	t.sq_offset = qp.sq.offset;
	t.sq_size = qp.sq.size;
	err = ah_create(s.fd, s.pd, &t.ah, &t.ahn);
	expect(err, 0, "CREATE_AH");
	err = mr_reg(s.fd, s.pd, s.buf, s.len, IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_WRITE, &t.mr, &t.lkey, &t.rkey);
	expect(err, 0, "REG_MR, a second one");
	in_child(stranger, &t, 0, "another process");
	/* Ours are untouched. */
	sq_write(&qp, 42, s.lkey, U64(s.buf), s.rkey, U64(s.buf + 8192), 64);
	sq_publish(s.fd, &qp);
	err = cq_wait(&s.cq, 42, 10);
	tap_ok(err == IBV_WC_SUCCESS, "our own WRITE afterwards: status %d", err);
	expect(ah_destroy(s.fd, t.ah), 0, "DESTROY_AH");
	expect(mr_dereg(s.fd, t.mr), 0, "DEREG_MR of the second");
	/* A child that inherits the file. */
	in_child(heir, &s, 0, "a child of fork()");
	expect(qp_destroy(s.fd, qp.h), 0, "DESTROY_QP");
	sess_close(&s);
}

/* ================================================================== mmap */

static void toucher(void *arg)
{
	/* Not inherited (VM_DONTCOPY): this faults. */
	child_tap(true, "touching the parent's ring address %p", arg);
	*(volatile uint32_t *)arg = 1;
	child_tap(false, "the write to the parent's ring went through");
}

static void group_mmap(void)
{
	struct cq cq;
	struct sess s;
	void *p, *q;
	int err;

	sess_open(&s);
	err = cq_create(s.fd, 64, true, &cq);
	if (err)
		tap_bail("CREATE_CQ with a ring: %s", ename(err));
	munmap(cq.r.addr, cq.r.size);

#define MAPERR(len, prot, flags, off)					\
	((q = mmap(NULL, (len), (prot), (flags), s.fd, (off))) == MAP_FAILED ? \
	 errno : (munmap(q, (len)), 0))

	expect(MAPERR(cq.r.size + 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		      cq.r.offset), EINVAL, "mmap of a ring, one page too long");
	if (cq.r.size > 4096)
		expect(MAPERR(cq.r.size - 4096, PROT_READ | PROT_WRITE,
			      MAP_SHARED, cq.r.offset), EINVAL,
		       "mmap of a ring, one page short");
	expect(MAPERR(cq.r.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      cq.r.offset + 4096 * 977), EINVAL,
	       "mmap at an offset that names nothing");
	expect(MAPERR(cq.r.size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		      cq.r.offset), EINVAL, "a private mapping of a ring");
	expect(MAPERR(cq.r.size, PROT_READ | PROT_EXEC, MAP_SHARED,
		      cq.r.offset), EPERM, "an executable mapping of a ring");
	p = mmap(NULL, cq.r.size, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd,
		 cq.r.offset);
	tap_ok(p != MAP_FAILED, "mmap of the ring (%s)",
	       p == MAP_FAILED ? strerror(errno) : "ok");
	if (p == MAP_FAILED)
		tap_bail("cannot map a ring");
	err = mprotect(p, cq.r.size, PROT_READ | PROT_EXEC) ? errno : 0;
	expect(err, EACCES, "mprotect(PROT_EXEC) of the ring");
	err = mremap(p, cq.r.size, cq.r.size + 4096, 0) == MAP_FAILED ?
	      errno : 0;
	tap_ok(err != 0, "mremap() growing the ring in place: %s", ename(err));
	q = mremap(p, cq.r.size, cq.r.size + 4096, MREMAP_MAYMOVE);
	err = q == MAP_FAILED ? errno : 0;
	tap_ok(err != 0, "mremap() growing the ring elsewhere: %s", ename(err));
	if (q != MAP_FAILED)
		p = q;
	/* A child has no copy of it. */
	in_child(toucher, p, -SIGSEGV, "a child touching the ring");
	/* The object goes: the mapping stays, its offset is gone. */
	expect(cq_destroy(s.fd, cq.h), 0, "DESTROY_CQ of a mapped ring");
	((volatile uint32_t *)p)[16] = 5;
	tap_ok(((volatile uint32_t *)p)[16] == 5,
	       "the mapping of a destroyed CQ is still memory of ours");
	expect(MAPERR(cq.r.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      cq.r.offset), EINVAL, "mmap of a destroyed CQ's ring");
	munmap(p, cq.r.size);
#undef MAPERR
	sess_close(&s);
}

/* ================================================================= rings */

/* Work requests written into a send ring that the kernel must refuse. */
enum spoil {
	SP_RESERVED0, SP_RESERVED1, SP_SGES, SP_INLINE, SP_OPCODE, SP_BIND,
	SP_FLAGS, SP_NR
};

static const char *const spoil_name[SP_NR] = {
	[SP_RESERVED0] = "the first reserved word set",
	[SP_RESERVED1] = "the second reserved word set",
	[SP_SGES] = "more SGEs than the QP has",
	[SP_INLINE] = "more inline bytes than the QP has",
	[SP_OPCODE] = "opcode 99",
	[SP_BIND] = "a memory window bind",
	[SP_FLAGS] = "an unknown send flag",
};

static void spoil(struct metaroce_swqe *w, enum spoil how)
{
	switch (how) {
	case SP_RESERVED0:
		w->reserved[0] = 0x1000;
		break;
	case SP_RESERVED1:
		w->reserved[1] = 1;
		break;
	case SP_SGES:
		w->num_sge = 17;
		break;
	case SP_INLINE:
		w->send_flags |= IBV_SEND_INLINE;
		w->inline_len = 4096;
		break;
	case SP_OPCODE:
		w->opcode = 99;
		break;
	case SP_BIND:
		w->opcode = IBV_WR_BIND_MW;
		break;
	case SP_FLAGS:
		w->send_flags |= 1u << 20;
		break;
	default:
		break;
	}
}

static void group_rings(void)
{
	struct metaroce_swqe *w;
	struct sess s;
	struct qp qp;
	int st, i;

	sess_open(&s);
	loop_qp(&s, &qp);
	for (i = 0; i < SP_NR; i++) {
		/* A good one, the spoiled one, a good one. */
		sq_write(&qp, 100 * i + 1, s.lkey, U64(s.buf), s.rkey,
			 U64(s.buf + 65536), 512);
		w = sq_write(&qp, 100 * i + 2, s.lkey, U64(s.buf), s.rkey,
			     U64(s.buf + 65536), 512);
		spoil(w, i);
		sq_write(&qp, 100 * i + 3, s.lkey, U64(s.buf), s.rkey,
			 U64(s.buf + 65536), 512);
		sq_publish(s.fd, &qp);
		st = cq_wait(&s.cq, 100 * i + 1, 10);
		tap_ok(st == IBV_WC_SUCCESS,
		       "send ring: the WRITE before one with %s: status %d",
		       spoil_name[i], st);
		st = cq_wait(&s.cq, 100 * i + 2, 10);
		tap_ok(st == IBV_WC_LOC_QP_OP_ERR,
		       "send ring: a WRITE with %s: status %d (LOC_QP_OP_ERR %d expected)",
		       spoil_name[i], st, IBV_WC_LOC_QP_OP_ERR);
		st = cq_wait(&s.cq, 100 * i + 3, 10);
		tap_ok(st == IBV_WC_SUCCESS,
		       "send ring: the WRITE after one with %s: status %d",
		       spoil_name[i], st);
	}
	/* UD: the address's reserved words too. */
	{
		struct qp_opts o = { .type = IBV_QPT_UD, .wr = 16, .sge = 1,
				     .rings = true, .srq = ~0u };
		uint32_t ah, ahn;
		struct qp ud;
		int err;

		err = qp_create(s.fd, s.pd, s.cq.h, &o, &ud);
		if (!err)
			err = qp_connect(s.fd, &ud, 0);
		if (!err)
			err = ah_create(s.fd, s.pd, &ah, &ahn);
		expect(err, 0, "a UD QP with rings, and an AH");
		if (!err) {
			w = sq_slot(&ud, ud.sq_prod++);
			memset(w, 0, sizeof(*w));
			w->wr_id = 900;
			w->opcode = IBV_WR_SEND;
			w->send_flags = IBV_SEND_SIGNALED;
			w->ud.ahn = ahn;
			w->ud.remote_qpn = ud.qpn;
			w->ud.remote_qkey = 0x11111111;
			w->ud.reserved[1] = 4;
			sq_publish(s.fd, &ud);
			st = cq_wait(&s.cq, 900, 10);
			tap_ok(st == IBV_WC_LOC_QP_OP_ERR,
			       "UD send ring: a send with its address's reserved word set: status %d",
			       st);
			w = sq_slot(&ud, ud.sq_prod++);
			memset(w, 0, sizeof(*w));
			w->wr_id = 901;
			w->opcode = IBV_WR_SEND;
			w->send_flags = IBV_SEND_SIGNALED;
			w->ud.ahn = ahn + 100000;
			w->ud.remote_qpn = ud.qpn;
			sq_publish(s.fd, &ud);
			st = cq_wait(&s.cq, 901, 10);
			tap_ok(st == IBV_WC_LOC_QP_OP_ERR,
			       "UD send ring: a send naming an AH that does not exist: status %d",
			       st);
			expect(qp_destroy(s.fd, ud.h), 0, "DESTROY_QP UD");
			expect(ah_destroy(s.fd, ah), 0, "DESTROY_AH");
		}
	}
	/* Impossible producer indexes are ignored, not acted on. */
	{
		struct metaroce_sq_ring *r = qp.sq.addr;
		uint32_t keep = qp.sq_prod;

		__atomic_store_n(&r->producer, keep + 100000, __ATOMIC_RELEASE);
		expect(doorbell(s.fd, qp.h), 0,
		       "a doorbell with the producer far ahead");
		__atomic_store_n(&r->producer, keep - 5, __ATOMIC_RELEASE);
		expect(doorbell(s.fd, qp.h), 0,
		       "a doorbell with the producer behind");
		qp.sq_prod = keep;
		sq_write(&qp, 999, s.lkey, U64(s.buf), s.rkey,
			 U64(s.buf + 65536), 512);
		sq_publish(s.fd, &qp);
		st = cq_wait(&s.cq, 999, 10);
		tap_ok(st == IBV_WC_SUCCESS,
		       "the ring works once its producer is sane again: status %d",
		       st);
	}
	expect(qp_destroy(s.fd, qp.h), 0, "DESTROY_QP");
	sess_close(&s);
}

/* ============================================================== scribble */

#define NQ 3
#define MAX_MAPS 1024

struct scribble {
	struct sess s;
	pthread_mutex_t lock[NQ];
	struct qp qp[NQ];
	atomic_bool stop;
	/* Every ring ever mapped (never unmapped while threads run). */
	pthread_mutex_t maps_lock;
	struct ring maps[MAX_MAPS];
	int nmaps;
	atomic_uint posted, churned, scribbled, commands;
};

static void add_map(struct scribble *sc, const struct ring *r)
{
	pthread_mutex_lock(&sc->maps_lock);
	if (r->addr && sc->nmaps < MAX_MAPS)
		sc->maps[sc->nmaps++] = *r;
	pthread_mutex_unlock(&sc->maps_lock);
}

static void *streamer(void *arg)
{
	struct scribble *sc = arg;
	struct metaroce_cqe c;
	uint64_t n = 0;
	int i;

	while (!atomic_load(&sc->stop)) {
		for (i = 0; i < NQ; i++) {
			pthread_mutex_lock(&sc->lock[i]);
			sq_write(&sc->qp[i], n++, sc->s.lkey, U64(sc->s.buf),
				 sc->s.rkey, U64(sc->s.buf + 65536 * (i + 1)),
				 4096);
			sq_publish(sc->s.fd, &sc->qp[i]);
			pthread_mutex_unlock(&sc->lock[i]);
			atomic_fetch_add(&sc->posted, 1);
		}
		/* The scribblers write the producer index too: bounded. */
		for (i = 0; i < 64 && cq_take(&sc->s.cq, &c); i++)
			;
		usleep(200);
	}
	return NULL;
}

static void *scribbler(void *arg)
{
	struct scribble *sc = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)pthread_self();

	while (!atomic_load(&sc->stop)) {
		struct ring r;
		uint64_t off;
		int i;

		pthread_mutex_lock(&sc->maps_lock);
		r = sc->maps[rnd(&seed) % sc->nmaps];
		pthread_mutex_unlock(&sc->maps_lock);
		for (i = 0; i < 64; i++) {
			/* Mostly the indexes and flags at the front. */
			off = rnd(&seed) & 1 ? rnd(&seed) % 256 :
			      rnd(&seed) % r.size;
			off &= ~3ULL;
			((volatile uint32_t *)r.addr)[off / 4] =
				rnd(&seed) & 1 ? (uint32_t)rnd(&seed) :
				(uint32_t)(rnd(&seed) % 64);
		}
		atomic_fetch_add(&sc->scribbled, 64);
		usleep(100);
	}
	return NULL;
}

/* Commands on the objects the others use, in random order. */
static void *churner(void *arg)
{
	struct scribble *sc = arg;
	uint64_t seed = 0x5bd1e995ULL ^ (uint64_t)pthread_self();
	struct cq scratch;
	uint32_t h;
	int err;

	while (!atomic_load(&sc->stop)) {
		int i = rnd(&seed) % NQ;
		struct qp *qp = &sc->qp[i];
		struct qp nq;

		switch (rnd(&seed) % 6) {
		case 0:		/* destroyed under the streamer, made again */
			pthread_mutex_lock(&sc->lock[i]);
			qp_destroy(sc->s.fd, qp->h);
			err = qp_create(sc->s.fd, sc->s.pd, sc->s.cq.h,
					&rc_ring, &nq);
			if (!err) {
				qp_connect(sc->s.fd, &nq, nq.qpn);
				add_map(sc, &nq.sq);
				add_map(sc, &nq.rq);
				*qp = nq;
			}
			pthread_mutex_unlock(&sc->lock[i]);
			atomic_fetch_add(&sc->churned, 1);
			break;
		case 1:		/* reset and connected again, no lock */
			qp_state(sc->s.fd, qp->h, IBV_QPS_RESET);
			qp_connect(sc->s.fd, qp, qp->qpn);
			break;
		case 2:		/* error, then back */
			qp_state(sc->s.fd, qp->h, IBV_QPS_ERR);
			qp_state(sc->s.fd, qp->h, IBV_QPS_RESET);
			qp_connect(sc->s.fd, qp, qp->qpn);
			break;
		case 3: {	/* queries */
			struct ib_uverbs_query_qp_resp r;
			struct ib_uverbs_query_qp q = { .response = U64(&r),
							.qp_handle = qp->h,
							.attr_mask = ~0u };

			cmd(sc->s.fd, IB_USER_VERBS_CMD_QUERY_QP, &q,
			    sizeof(q), sizeof(r));
			break;
		}
		case 4: {	/* a CQ with a ring, resized, destroyed */
			struct ib_uverbs_resize_cq_resp rr[4];
			struct {
				struct ib_uverbs_resize_cq c;
				struct metaroce_create_cq_req d;
			} rq = {};

			if (cq_create(sc->s.fd, 32, true, &scratch))
				break;
			add_map(sc, &scratch.r);
			rq.c.response = U64(rr);
			rq.c.cq_handle = scratch.h;
			rq.c.cqe = 1 + rnd(&seed) % 1000;
			rq.d.comp_mask = METAROCE_CQ_RING;
			cmd(sc->s.fd, IB_USER_VERBS_CMD_RESIZE_CQ, &rq,
			    sizeof(rq), sizeof(rr));
			cq_destroy(sc->s.fd, scratch.h);
			break;
		}
		default:	/* doorbells, some on handles that name nothing */
			doorbell(sc->s.fd, rnd(&seed) & 1 ? qp->h :
				 (uint32_t)rnd(&seed));
			if (!pd_alloc(sc->s.fd, &h))
				pd_free(sc->s.fd, h);
			break;
		}
		atomic_fetch_add(&sc->commands, 1);
	}
	return NULL;
}

static void group_scribble(double secs)
{
	struct scribble *sc = calloc(1, sizeof(*sc));
	pthread_t th[4];
	struct metaroce_cqe c;
	struct qp qp;
	double t0;
	int i, st;

	if (!sc)
		tap_bail("out of memory");
	sess_open(&sc->s);
	pthread_mutex_init(&sc->maps_lock, NULL);
	add_map(sc, &sc->s.cq.r);
	for (i = 0; i < NQ; i++) {
		pthread_mutex_init(&sc->lock[i], NULL);
		loop_qp(&sc->s, &sc->qp[i]);
		add_map(sc, &sc->qp[i].sq);
		add_map(sc, &sc->qp[i].rq);
	}
	t0 = now_s();
	pthread_create(&th[0], NULL, streamer, sc);
	pthread_create(&th[1], NULL, scribbler, sc);
	pthread_create(&th[2], NULL, scribbler, sc);
	pthread_create(&th[3], NULL, churner, sc);
	while (now_s() - t0 < secs)
		usleep(100000);
	atomic_store(&sc->stop, true);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	tap_diag("%.1f s: %u work requests posted, %u words scribbled, %u commands, %u QPs remade",
		 now_s() - t0, atomic_load(&sc->posted),
		 atomic_load(&sc->scribbled), atomic_load(&sc->commands),
		 atomic_load(&sc->churned));
	tap_ok(atomic_load(&sc->posted) > 0 && atomic_load(&sc->commands) > 0,
	       "the streams, scribbles and commands ran together");
	/* Whatever the rings say now, the objects go cleanly. */
	for (i = 0; i < NQ; i++) {
		st = qp_destroy(sc->s.fd, sc->qp[i].h);
		tap_ok(st == 0 || st == EINVAL, "DESTROY_QP %d after the scribbling: %s",
		       i, ename(st));
	}
	/* A fresh CQ (the old ring is scribbled) and QP work as before. */
	{
		struct cq fresh;

		if (cq_create(sc->s.fd, 64, true, &fresh))
			tap_bail("CREATE_CQ");
		sc->s.cq = fresh;
		loop_qp(&sc->s, &qp);
		while (cq_take(&sc->s.cq, &c))
			;
		sq_write(&qp, 4242, sc->s.lkey, U64(sc->s.buf), sc->s.rkey,
			 U64(sc->s.buf + 4096), 4096);
		sq_publish(sc->s.fd, &qp);
		st = cq_wait(&sc->s.cq, 4242, 10);
		tap_ok(st == IBV_WC_SUCCESS,
		       "a fresh QP and CQ work after the scribbling: status %d", st);
	}
	close(sc->s.async_fd);
	expect(close(sc->s.fd) ? errno : 0, 0, "closing the file frees the rest");
	free(sc);
}

/* ================================================================== fork */

struct busy {
	struct sess *s;
	struct qp *qp;
	atomic_bool stop;
	atomic_uint n;
};

/* Commands, as fast as they go. */
static void *commander(void *arg)
{
	struct busy *b = arg;
	uint32_t pd, mr;
	struct cq cq;

	while (!atomic_load(&b->stop)) {
		if (!pd_alloc(b->s->fd, &pd)) {
			if (!mr_reg(b->s->fd, pd, b->s->buf, 65536,
				    IBV_ACCESS_LOCAL_WRITE, &mr, NULL, NULL))
				mr_dereg(b->s->fd, mr);
			pd_free(b->s->fd, pd);
		}
		if (!cq_create(b->s->fd, 16, false, &cq))
			cq_destroy(b->s->fd, cq.h);
		if (b->qp)
			doorbell(b->s->fd, b->qp->h);
		atomic_fetch_add(&b->n, 1);
	}
	return NULL;
}

static void forked_child(void *arg)
{
	struct busy *b = arg, mine = {};
	struct ib_uverbs_query_device_resp qd;
	struct ib_uverbs_query_device q = { .response = U64(&qd) };
	pthread_t th;

	/*
	 * The parent's threads are gone here; the file is shared, but not
	 * its credentials (see heir()).
	 */
	child_expect(cmd(b->s->fd, IB_USER_VERBS_CMD_QUERY_DEVICE, &q,
			 sizeof(q), sizeof(qd)), EACCES,
		     "QUERY_DEVICE on the inherited file");
	/* Threads of its own in commands on a file of its own, then
	 * _exit() under them. */
	mine.s = calloc(1, sizeof(*mine.s));
	if (!mine.s)
		_exit(3);
	sess_open(mine.s);
	pthread_create(&th, NULL, commander, &mine);
	while (atomic_load(&mine.n) < 3)
		usleep(100);
	_exit(0);
}

static void group_fork(void)
{
	struct busy b = {};
	pthread_t th[2];
	struct sess s;
	struct qp qp;
	int i, st;

	sess_open(&s);
	loop_qp(&s, &qp);
	b.s = &s;
	b.qp = &qp;
	pthread_create(&th[0], NULL, commander, &b);
	pthread_create(&th[1], NULL, commander, &b);
	for (i = 0; i < 20; i++) {
		while (atomic_load(&b.n) < (unsigned int)i * 3)
			usleep(100);
		in_child(forked_child, &b, 0, "a child forked mid-command");
	}
	atomic_store(&b.stop, true);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	tap_diag("%u rounds of commands beside 20 forks", atomic_load(&b.n));
	sq_write(&qp, 31337, s.lkey, U64(s.buf), s.rkey, U64(s.buf + 4096),
		 4096);
	sq_publish(s.fd, &qp);
	st = cq_wait(&s.cq, 31337, 10);
	tap_ok(st == IBV_WC_SUCCESS,
	       "the parent's QP works after the forks: status %d", st);
	expect(qp_destroy(s.fd, qp.h), 0, "DESTROY_QP");
	sess_close(&s);
}

/* ================================================================= reset */

struct flood {
	struct sess *s;
	struct qp qp;
	uint32_t ahn, dest;
	atomic_bool stop;
	atomic_uint sent;
};

/* UD datagrams to @dest, as fast as the send ring takes them. */
static void *flooder(void *arg)
{
	struct flood *f = arg;
	struct metaroce_cqe c;
	struct metaroce_swqe *w;
	struct metaroce_sge *sg;
	uint32_t out = 0;
	int i;

	while (!atomic_load(&f->stop)) {
		for (i = 0; i < 8 && out < f->qp.sq.slots / 2; i++, out++) {
			w = sq_slot(&f->qp, f->qp.sq_prod++);
			memset(w, 0, sizeof(*w));
			w->wr_id = f->qp.sq_prod;
			w->opcode = IBV_WR_SEND;
			w->send_flags = IBV_SEND_SIGNALED;
			w->num_sge = 1;
			w->ud.ahn = f->ahn;
			w->ud.remote_qpn = f->dest;
			w->ud.remote_qkey = 0x11111111;
			sg = (void *)(w + 1);
			sg->addr = U64(f->s->buf);
			sg->length = 1024;
			sg->lkey = f->s->lkey;
		}
		sq_publish(f->s->fd, &f->qp);
		while (cq_take(&f->s->cq, &c)) {
			out--;
			atomic_fetch_add(&f->sent, 1);
		}
		sched_yield();
	}
	return NULL;
}

/*
 * A UD QP with the kernel's own queues (no rings: its CQ is polled with
 * POLL_CQ, and the kernel removes a reset QP's completions from it) takes
 * a flood of datagrams while it is reset again and again. Once MODIFY_QP
 * to RESET has returned, the CQ holds nothing of the QP's: a receive that
 * was under way when the reset began completes before it, or never.
 */
static void group_reset(double secs)
{
	struct ib_uverbs_poll_cq pq = {};
	struct {
		struct ib_uverbs_poll_cq_resp r;
		struct ib_uverbs_wc wc[16];
	} pr;
	struct qp_opts o = { .type = IBV_QPT_UD, .wr = 64, .sge = 1,
			     .srq = ~0u };
	struct ib_uverbs_recv_wr rw[16];
	struct ib_uverbs_sge sg[16];
	unsigned int resets = 0, stale = 0, got = 0;
	struct flood f = {};
	struct cq rcq;
	struct qp rqp;
	pthread_t th;
	uint32_t ah;
	double t0;
	int err, i;

	struct sess sess;

	sess_open(&sess);
	f.s = &sess;
	/* The receiver: kernel queues, a CQ without a ring. */
	err = cq_create(sess.fd, 1024, false, &rcq);
	if (!err)
		err = qp_create(sess.fd, sess.pd, rcq.h, &o, &rqp);
	if (err)
		tap_bail("a UD QP without rings: %s", ename(err));
	/* The flooder: a send ring, the session's CQ. */
	o.rings = true;
	o.wr = 256;
	err = qp_create(sess.fd, sess.pd, sess.cq.h, &o, &f.qp);
	if (!err)
		err = qp_connect(sess.fd, &f.qp, 0);
	if (!err)
		err = ah_create(sess.fd, sess.pd, &ah, &f.ahn);
	if (err)
		tap_bail("the flooding UD QP: %s", ename(err));
	f.dest = rqp.qpn;
	pq.cq_handle = rcq.h;
	pq.ne = 16;
	pq.response = U64(&pr);
	for (i = 0; i < 16; i++) {
		sg[i].addr = U64(sess.buf + 4096 * (i + 1));
		sg[i].length = 2048;
		sg[i].lkey = sess.lkey;
		rw[i].num_sge = 1;
		rw[i].reserved = 0;
	}
	pthread_create(&th, NULL, flooder, &f);
	t0 = now_s();
	while (now_s() - t0 < secs) {
		err = qp_connect(sess.fd, &rqp, 0);
		if (err) {
			tap_ok(false, "connecting the receiver: %s", ename(err));
			break;
		}
		for (i = 0; i < 16; i++)
			rw[i].wr_id = (uint64_t)resets << 8 | i;
		/* One work request each: the SGE of each follows the lot. */
		for (i = 0; i < 16; i++)
			post_raw(sess.fd, IB_USER_VERBS_CMD_POST_RECV, rqp.h,
				 &rw[i], 1, sizeof(rw[i]), &sg[i], 1);
		/* Let some of them take datagrams. */
		for (i = 0; i < 3; i++) {
			if (!cmd(sess.fd, IB_USER_VERBS_CMD_POLL_CQ, &pq,
				 sizeof(pq), sizeof(pr)))
				got += pr.r.count;
		}
		err = qp_state(sess.fd, rqp.h, IBV_QPS_RESET);
		if (err) {
			tap_ok(false, "reset: %s", ename(err));
			break;
		}
		resets++;
		/* Nothing of the QP's may be left, nor come now. */
		usleep(50);
		if (!cmd(sess.fd, IB_USER_VERBS_CMD_POLL_CQ, &pq, sizeof(pq),
			 sizeof(pr)) && pr.r.count) {
			stale += pr.r.count;
			tap_diag("after reset %u: %u completions, the first wr_id %#llx status %u",
				 resets, pr.r.count,
				 (unsigned long long)pr.wc[0].wr_id,
				 pr.wc[0].status);
		}
	}
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	tap_diag("%.1f s: %u resets, %u datagrams sent, %u received between them",
		 now_s() - t0, resets, atomic_load(&f.sent), got);
	tap_ok(resets > 50 && got > 0,
	       "the receiver was reset %u times while taking datagrams (%u)",
	       resets, got);
	tap_ok(!stale, "no completion of a reset QP after its reset: %u found",
	       stale);
	qp_destroy(sess.fd, rqp.h);
	qp_destroy(sess.fd, f.qp.h);
	ah_destroy(sess.fd, ah);
	cq_destroy(sess.fd, rcq.h);
	sess_close(&sess);
}

/* ================================================================== kill */

static void *pumper(void *arg)
{
	struct busy *b = arg;
	struct metaroce_cqe c;
	uint64_t n = 0;

	while (!atomic_load(&b->stop)) {
		sq_write(b->qp, n++, b->s->lkey, U64(b->s->buf), b->s->rkey,
			 U64(b->s->buf + 65536), 16384);
		sq_publish(b->s->fd, b->qp);
		while (cq_take(&b->s->cq, &c))
			;
		if (n % 32 == 0) {
			qp_state(b->s->fd, b->qp->h, IBV_QPS_RESET);
			qp_connect(b->s->fd, b->qp, b->qp->qpn);
		}
	}
	return NULL;
}

/* Every kind of object, busy, until killed or exiting by itself. */
static void victim(void *arg)
{
	int self_exit = *(int *)arg;
	struct busy b = {};
	uint32_t ah, ahn, srq;
	struct ring srq_ring;
	pthread_t th[3];
	struct sess s;
	struct qp qp, qp2;
	struct qp_opts o = rc_ring;

	sess_open(&s);
	loop_qp(&s, &qp);
	srq_create(s.fd, s.pd, 64, 2, true, &srq, &srq_ring);
	o.srq = srq;
	if (!qp_create(s.fd, s.pd, s.cq.h, &o, &qp2))
		qp_connect(s.fd, &qp2, qp.qpn);
	ah_create(s.fd, s.pd, &ah, &ahn);
	b.s = &s;
	b.qp = &qp;
	pthread_create(&th[0], NULL, commander, &b);
	pthread_create(&th[1], NULL, commander, &b);
	pthread_create(&th[2], NULL, pumper, &b);
	if (self_exit) {
		usleep(self_exit * 1000);
		_exit(0);
	}
	for (;;)
		pause();
}

static void group_kill(void)
{
	uint64_t seed = 0x1234567ULL ^ (uint64_t)getpid();
	struct sess s;
	struct qp qp;
	int i, ws, st, self;
	pid_t pid;

	for (i = 0; i < 16; i++) {
		/* Half exit by themselves, half are killed. */
		self = i & 1 ? 20 + rnd(&seed) % 300 : 0;
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			tap_bail("fork: %s", strerror(errno));
		if (!pid) {
			victim(&self);
			_exit(0);
		}
		if (!self) {
			usleep((20 + rnd(&seed) % 300) * 1000);
			kill(pid, SIGKILL);
		}
		waitpid(pid, &ws, 0);
		tap_ok(self ? WIFEXITED(ws) && !WEXITSTATUS(ws) :
		       WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL,
		       "a busy process %s (status %#x)",
		       self ? "calling _exit() with commands in flight" :
		       "killed with commands in flight", ws);
	}
	/* The device still serves a new process. */
	sess_open(&s);
	loop_qp(&s, &qp);
	sq_write(&qp, 5, s.lkey, U64(s.buf), s.rkey, U64(s.buf + 4096), 4096);
	sq_publish(s.fd, &qp);
	st = cq_wait(&s.cq, 5, 10);
	tap_ok(st == IBV_WC_SUCCESS, "a new process's WRITE afterwards: status %d",
	       st);
	qp_destroy(s.fd, qp.h);
	sess_close(&s);
}

int main(int argc, char **argv)
{
	double secs = 10;

	if (argc < 4) {
		fprintf(stderr,
			"usage: mr_misuse commands|requests|handles|mmap|rings|scribble|fork|kill|reset DEV GIDX [SECONDS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	find_dev(argv[2]);
	gidx = atoi(argv[3]);
	read_gid(argv[2]);
	if (argc > 4)
		secs = atof(argv[4]);
	tap_start();
	if (!strcmp(argv[1], "commands"))
		group_commands();
	else if (!strcmp(argv[1], "requests"))
		group_requests();
	else if (!strcmp(argv[1], "handles"))
		group_handles();
	else if (!strcmp(argv[1], "mmap"))
		group_mmap();
	else if (!strcmp(argv[1], "rings"))
		group_rings();
	else if (!strcmp(argv[1], "scribble"))
		group_scribble(secs);
	else if (!strcmp(argv[1], "fork"))
		group_fork();
	else if (!strcmp(argv[1], "kill"))
		group_kill();
	else if (!strcmp(argv[1], "reset"))
		group_reset(secs);
	else
		tap_bail("unknown group %s", argv[1]);
	return tap_done();
}
