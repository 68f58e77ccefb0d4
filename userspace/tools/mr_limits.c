// SPDX-License-Identifier: GPL-2.0-only
/*
 * mr_limits: the device's limits, enforced (selftests/metaroce/limits.sh).
 * Prints TAP; exit status 0 when every check passed.
 *
 *   mr_limits objects DEV HAVE
 *	For every object count ibv_query_device reports (max_pd, max_mr,
 *	max_cq, max_srq, max_qp, max_ah), creates objects until one is
 *	refused: the device must take exactly the limit (less the objects of
 *	that kind it already has, given in HAVE as "pd=1,cq=2,qp=1,..."), and
 *	refuse the next one with ENOMEM, as the verbs man pages say; once one
 *	goes, another can come. Attributes past their limits are refused with
 *	EINVAL.
 *
 *   mr_limits memcg DEV GIDX CGROUP PREFIX
 *	Moves itself into the cgroup v2 directory CGROUP and creates QPs with
 *	deep queues, CQs, SRQs and MRs, and connects QPs to 16 addresses
 *	PREFIX.0.1, PREFIX.0.2, ... (a peer each): nearly all the kernel memory
 *	this takes (unreclaimable slab plus vmalloc) must be charged to the
 *	cgroup (memory.current).
 *
 *   mr_limits peers DEV GIDX PREFIX
 *	The device's peer limits (sysfs max_peers, max_peer_mem_mb): with
 *	max_peers 8, eight QPs connected to eight addresses hold eight
 *	peers and a ninth address is refused with ENOMEM, until a QP goes and
 *	its peer, unused, makes room; the same with the memory limit. Restores
 *	both tunables.
 *
 *   mr_limits churn DEV GIDX PREFIX N MAX_PEERS
 *	N times: create an RC QP, connect it to a new address (PREFIX.x.y,
 *	which nobody answers), post a SEND, destroy it; with max_peers
 *	MAX_PEERS. The device never holds more than MAX_PEERS peers, kernel
 *	memory stays bounded through the loop, and after it every peer goes
 *	within 30 s and kernel memory comes back.
 *
 * DEV is an RDMA device; GIDX the index of its RoCE v2 GID to send from;
 * PREFIX the first two bytes of the IPv4 addresses to connect to ("10.200"),
 * routed so that the device resolves them and nobody answers.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "tap.h"

static const char *dev_name;
static struct ibv_context *ctx;
static struct ibv_device_attr attr;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int gidx;
static union ibv_gid gid;

static void open_dev(const char *name)
{
	struct ibv_device **list;
	int i, n;

	dev_name = name;
	list = ibv_get_device_list(&n);
	if (!list)
		tap_bail("ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (i == n)
		tap_bail("no RDMA device %s", name);
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		tap_bail("ibv_open_device %s: %s", name, strerror(errno));
	ibv_free_device_list(list);
	if (ibv_query_device(ctx, &attr))
		tap_bail("ibv_query_device: %s", strerror(errno));
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		tap_bail("PD or CQ: %s", strerror(errno));
}

static void set_gid(const char *arg)
{
	gidx = atoi(arg);
	if (ibv_query_gid(ctx, 1, gidx, &gid))
		tap_bail("ibv_query_gid %d: %s", gidx, strerror(errno));
}

/* --- sysfs, debugfs, /proc --------------------------------------------- */

static int sysfs_write(const char *file, unsigned long v)
{
	char path[256], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/metaroce/%s",
		 dev_name, file);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return errno;
	n = snprintf(buf, sizeof(buf), "%lu", v);
	if (write(fd, buf, n) != n)
		err = errno;
	close(fd);
	return err;
}

static long sysfs_read(const char *file)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/metaroce/%s",
		 dev_name, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The device's peer accounting line in debugfs. */
struct peer_stats {
	long connections, max, memory, max_memory, evicted, refused;
};

static bool peer_stats(struct peer_stats *ps)
{
	char path[256], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/metaroce/%s/peers",
		 dev_name);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "connections %ld max %ld memory %ld max_memory %ld evicted %ld refused %ld",
			   &ps->connections, &ps->max, &ps->memory,
			   &ps->max_memory, &ps->evicted, &ps->refused) == 6) {
			found = true;
			break;
		}
	fclose(f);
	return found;
}

/* Peers in the debugfs table ("peer ..." lines), -1 without debugfs. */
static long peer_lines(void)
{
	char path[256], line[512];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/metaroce/%s/peers",
		 dev_name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "peer ", 5))
			n++;
	fclose(f);
	return n;
}

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (write(fd, s, strlen(s)) < 0)
			tap_diag("write %s: %s", path, strerror(errno));
		close(fd);
	}
}

/*
 * Kernel memory in KiB: unreclaimable slab plus vmalloc, once the slab
 * caches have given back their empty slabs (as scale.sh measures it).
 */
static long kmem_kib(void)
{
	char line[256];
	long v, total = 0;
	FILE *f;

	sync();
	write_file("/proc/sys/vm/drop_caches", "3");
	f = popen("for f in /sys/kernel/slab/*/shrink; do echo 1 > $f; done 2>/dev/null",
		  "r");
	if (f)
		pclose(f);
	f = fopen("/proc/meminfo", "r");
	if (!f)
		tap_bail("/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SUnreclaim: %ld", &v) == 1 ||
		    sscanf(line, "VmallocUsed: %ld", &v) == 1)
			total += v;
	fclose(f);
	return total;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- QPs ---------------------------------------------------------------- */

static struct ibv_qp *rc_qp(uint32_t wr, uint32_t sge)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = wr,
			.max_recv_wr = wr,
			.max_send_sge = sge,
			.max_recv_sge = sge,
			.max_inline_data = 64,
		},
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(pd, &ia);
}

/* PREFIX.(i >> 8).(i & 255), as a v4-mapped GID. */
static void addr_gid(const char *prefix, unsigned int i, union ibv_gid *g)
{
	char s[64];
	struct in_addr a;

	snprintf(s, sizeof(s), "%s.%u.%u", prefix, (i >> 8) & 255, i & 255);
	if (inet_pton(AF_INET, s, &a) != 1)
		tap_bail("bad address %s", s);
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	memcpy(&g->raw[12], &a, 4);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT -> RTR towards PREFIX address @i: 0 or the errno. */
static int to_rtr(struct ibv_qp *qp, const char *prefix, unsigned int i)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = 0x100 + i,
		.rq_psn = 1,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = {
				.sgid_index = gidx,
				.hop_limit = 64,
			},
		},
	};

	addr_gid(prefix, i, &a.ah_attr.grh.dgid);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = 1,
		.max_rd_atomic = 1,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* A QP connected to PREFIX address @i, or NULL with *err set. */
static struct ibv_qp *connected_qp(const char *prefix, unsigned int i,
				   int *err)
{
	struct ibv_qp *qp = rc_qp(4, 1);

	if (!qp) {
		*err = errno;
		return NULL;
	}
	*err = to_init(qp);
	if (!*err)
		*err = to_rtr(qp, prefix, i);
	if (!*err)
		*err = to_rts(qp);
	if (*err) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* --- objects ------------------------------------------------------------- */

enum kind { K_PD, K_MR, K_CQ, K_SRQ, K_QP, K_AH, K_NR };

static const char *const kind_name[K_NR] = {
	"pd", "mr", "cq", "srq", "qp", "ah",
};

static void *page;

static void *obj_create(enum kind k)
{
	switch (k) {
	case K_PD:
		return ibv_alloc_pd(ctx);
	case K_MR:
		return ibv_reg_mr(pd, page, 4096, IBV_ACCESS_LOCAL_WRITE);
	case K_CQ:
		return ibv_create_cq(ctx, 1, NULL, NULL, 0);
	case K_SRQ: {
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = 1, .max_sge = 1 },
		};

		return ibv_create_srq(pd, &sa);
	}
	case K_QP:
		return rc_qp(1, 1);
	case K_AH: {
		struct ibv_ah_attr aa = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = gid, .sgid_index = gidx,
				 .hop_limit = 64 },
		};

		return ibv_create_ah(pd, &aa);
	}
	default:
		return NULL;
	}
}

static int obj_destroy(enum kind k, void *o)
{
	switch (k) {
	case K_PD:
		return ibv_dealloc_pd(o);
	case K_MR:
		return ibv_dereg_mr(o);
	case K_CQ:
		return ibv_destroy_cq(o);
	case K_SRQ:
		return ibv_destroy_srq(o);
	case K_QP:
		return ibv_destroy_qp(o);
	case K_AH:
		return ibv_destroy_ah(o);
	default:
		return EINVAL;
	}
}

static long kind_max(enum kind k)
{
	switch (k) {
	case K_PD:
		return attr.max_pd;
	case K_MR:
		return attr.max_mr;
	case K_CQ:
		return attr.max_cq;
	case K_SRQ:
		return attr.max_srq;
	case K_QP:
		return attr.max_qp;
	case K_AH:
		return attr.max_ah;
	default:
		return 0;
	}
}

/* The count NAME has in HAVE ("pd=1,cq=2,..."). */
static long have_count(const char *have, const char *name)
{
	const char *p = have;
	size_t n = strlen(name);

	while (p && *p) {
		if (!strncmp(p, name, n) && p[n] == '=')
			return strtol(p + n + 1, NULL, 10);
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

/* Objects of kind @k the device has besides those the loop creates. */
static long kind_have(const char *have, enum kind k)
{
	long v = have_count(have, kind_name[k]);

	/* The program's own PD and CQ are not in HAVE (taken before). */
	if (k == K_PD || k == K_CQ)
		v++;
	/*
	 * Every kernel PD (HAVE's) holds an MR that rdma resource does not
	 * show: ib_core's local DMA MR, for a device without a local DMA
	 * lkey.
	 */
	if (k == K_MR)
		v += have_count(have, "pd");
	return v;
}

static void check_kind(enum kind k, const char *have)
{
	long max = kind_max(k), want = max - kind_have(have, k), n = 0, i;
	double t0 = now_s();
	void **objs;
	void *extra;
	int err = 0;

	if (max <= 0 || want <= 0 || want > (1L << 24)) {
		tap_ok(false, "max_%s %ld with %ld already: nothing to test",
		       kind_name[k], max, max - want);
		return;
	}
	/* Room for one more than the limit allows: a device that does not
	 * enforce it takes that one too. */
	objs = calloc(want + 1, sizeof(*objs));
	if (!objs)
		tap_bail("out of memory");
	while (n <= want) {
		objs[n] = obj_create(k);
		if (!objs[n]) {
			err = errno;
			break;
		}
		n++;
	}
	tap_ok(n == want && err == ENOMEM,
	       "max_%s %ld: %ld created (%ld expected), then %s (ENOMEM expected) [%.1f s]",
	       kind_name[k], max, n, want, n > want ? "one more" : strerror(err),
	       now_s() - t0);
	/* The count is released: one goes, another comes. */
	if (n) {
		obj_destroy(k, objs[--n]);
		extra = obj_create(k);
		tap_ok(extra != NULL, "max_%s: one destroyed, another created (%s)",
		       kind_name[k], extra ? "ok" : strerror(errno));
		if (extra)
			objs[n++] = extra;
	}
	for (i = n - 1; i >= 0; i--)
		if (obj_destroy(k, objs[i]))
			tap_diag("destroying %s %ld failed", kind_name[k], i);
	free(objs);
}

/* Attributes past the reported limits: EINVAL. */
static void check_attributes(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr qa = {};
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_cq *c;

	ia.cap.max_recv_wr = attr.max_qp_wr + 1;
	qp = ibv_create_qp(pd, &ia);
	tap_ok(!qp && errno == EINVAL, "max_recv_wr past max_qp_wr: %s",
	       qp ? "created" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ia.cap.max_recv_wr = 1;
	ia.cap.max_recv_sge = attr.max_sge + 1;
	qp = ibv_create_qp(pd, &ia);
	tap_ok(!qp && errno == EINVAL, "max_recv_sge past max_sge: %s",
	       qp ? "created" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ia.cap.max_recv_sge = 1;

	sa.attr.max_wr = attr.max_srq_wr + 1;
	srq = ibv_create_srq(pd, &sa);
	tap_ok(!srq && errno == EINVAL, "SRQ max_wr past max_srq_wr: %s",
	       srq ? "created" : strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);
	sa.attr.max_wr = 1;
	sa.attr.max_sge = attr.max_srq_sge + 1;
	srq = ibv_create_srq(pd, &sa);
	tap_ok(!srq && errno == EINVAL, "SRQ max_sge past max_srq_sge: %s",
	       srq ? "created" : strerror(errno));
	if (srq)
		ibv_destroy_srq(srq);

	c = ibv_create_cq(ctx, attr.max_cqe + 1, NULL, NULL, 0);
	tap_ok(!c && errno == EINVAL, "CQ past max_cqe: %s",
	       c ? "created" : strerror(errno));
	if (c)
		ibv_destroy_cq(c);

	/* No need to map it: the length alone is refused. */
	mr = ibv_reg_mr(pd, page, attr.max_mr_size + 4096,
			IBV_ACCESS_LOCAL_WRITE);
	tap_ok(!mr && errno == EINVAL, "MR past max_mr_size: %s",
	       mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	qp = rc_qp(1, 1);
	if (!qp || to_init(qp))
		tap_bail("an RC QP in INIT: %s", strerror(errno));
	qa.qp_state = IBV_QPS_INIT;
	qa.max_dest_rd_atomic = attr.max_qp_rd_atom + 1;
	errno = ibv_modify_qp(qp, &qa, IBV_QP_MAX_DEST_RD_ATOMIC);
	tap_ok(errno == EINVAL, "max_dest_rd_atomic past max_qp_rd_atom: %s",
	       strerror(errno));
	qa.max_dest_rd_atomic = 0;
	qa.max_rd_atomic = attr.max_qp_init_rd_atom + 1;
	errno = ibv_modify_qp(qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC);
	tap_ok(errno == EINVAL, "max_rd_atomic past max_qp_init_rd_atom: %s",
	       strerror(errno));
	qa.pkey_index = attr.max_pkeys;
	errno = ibv_modify_qp(qp, &qa, IBV_QP_PKEY_INDEX);
	tap_ok(errno == EINVAL, "pkey_index past max_pkeys: %s", strerror(errno));
	ibv_destroy_qp(qp);
}

static int cmd_objects(int argc, char **argv)
{
	const char *have = argc > 3 ? argv[3] : "";
	const char *only = getenv("MR_LIMITS_ONLY");
	enum kind k;

	open_dev(argv[2]);
	/* The first GID: the device's own address (an AH to itself). */
	set_gid("0");
	for (gidx = 0; gidx < 16; gidx++)
		if (!ibv_query_gid(ctx, 1, gidx, &gid) &&
		    gid.raw[10] == 0xff && gid.raw[11] == 0xff)
			break;
	if (gidx == 16)
		tap_bail("%s has no IPv4 GID", dev_name);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memset(page, 0, 4096);
	tap_diag("%s: max_pd %d max_mr %d max_cq %d max_srq %d max_qp %d max_ah %d; already: %s",
		 dev_name, attr.max_pd, attr.max_mr, attr.max_cq, attr.max_srq,
		 attr.max_qp, attr.max_ah, have);
	for (k = 0; k < K_NR; k++)
		if (!only || strstr(only, kind_name[k]))
			check_kind(k, have);
	check_attributes();
	return tap_done();
}

/* --- memcg ---------------------------------------------------------------- */

static long cg_current(const char *cg)
{
	char path[512];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.current", cg);
	f = fopen(path, "r");
	if (!f)
		tap_bail("%s: %s", path, strerror(errno));
	if (fscanf(f, "%ld", &v) != 1)
		tap_bail("%s: no number", path);
	fclose(f);
	return v / 1024;
}

static int cmd_memcg(int argc, char **argv)
{
	enum { NQP = 8, NCQ = 8, NSRQ = 8, NPEER = 16 };
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 8192, .max_sge = 16 },
	};
	struct ibv_qp *qps[NQP], *conn[NPEER];
	struct ibv_srq *srqs[NSRQ];
	struct ibv_cq *cqs[NCQ];
	long k0, k1, c0, c1, kd, cd;
	char path[512], pid[32];
	int i, err;

	if (argc != 6)
		tap_bail("usage: mr_limits memcg DEV GIDX CGROUP PREFIX");
	open_dev(argv[2]);
	set_gid(argv[3]);
	snprintf(path, sizeof(path), "%s/cgroup.procs", argv[4]);
	snprintf(pid, sizeof(pid), "%d", getpid());
	write_file(path, pid);
	k0 = kmem_kib();
	c0 = cg_current(argv[4]);
	for (i = 0; i < NQP; i++) {
		qps[i] = rc_qp(4096, 16);
		if (!qps[i])
			tap_bail("QP %d with 4096 WRs of 16 SGEs: %s", i,
				 strerror(errno));
	}
	for (i = 0; i < NCQ; i++) {
		cqs[i] = ibv_create_cq(ctx, 65535, NULL, NULL, 0);
		if (!cqs[i])
			tap_bail("CQ %d of 65535: %s", i, strerror(errno));
	}
	for (i = 0; i < NSRQ; i++) {
		srqs[i] = ibv_create_srq(pd, &sa);
		if (!srqs[i])
			tap_bail("SRQ %d: %s", i, strerror(errno));
	}
	for (i = 0; i < NPEER; i++) {
		conn[i] = connected_qp(argv[5], i + 1, &err);
		if (!conn[i])
			tap_bail("QP connected to address %d: %s", i + 1,
				 strerror(err));
	}
	k1 = kmem_kib();
	c1 = cg_current(argv[4]);
	kd = k1 - k0;
	cd = c1 - c0;
	tap_diag("kernel memory %ld -> %ld KiB (+%ld), cgroup %ld -> %ld KiB (+%ld)",
		 k0, k1, kd, c0, c1, cd);
	/* 8 QPs alone take some 40 MiB: the measurement cannot be noise. */
	tap_ok(kd >= 32 * 1024, "the objects took %ld KiB of kernel memory (32 MiB or more expected)",
	       kd);
	tap_ok(cd >= kd * 8 / 10,
	       "%ld KiB of it charged to the cgroup: %ld%% (80%% or more expected)",
	       cd, kd > 0 ? cd * 100 / kd : 0);
	for (i = 0; i < NPEER; i++)
		ibv_destroy_qp(conn[i]);
	for (i = 0; i < NSRQ; i++)
		ibv_destroy_srq(srqs[i]);
	for (i = 0; i < NCQ; i++)
		ibv_destroy_cq(cqs[i]);
	for (i = 0; i < NQP; i++)
		ibv_destroy_qp(qps[i]);
	return tap_done();
}

/* --- peers ------------------------------------------------------------------ */

/*
 * Connect QPs to addresses @first.. until one is refused or @max are
 * connected; returns how many were, with the refusal's errno in *err.
 */
static int connect_until_refused(const char *prefix, unsigned int first,
				 int max, struct ibv_qp **qps, int *err)
{
	int n;

	*err = 0;
	for (n = 0; n < max; n++) {
		qps[n] = connected_qp(prefix, first + n, err);
		if (!qps[n])
			break;
	}
	return n;
}

static int cmd_peers(int argc, char **argv)
{
	enum { LIMIT = 8, ROOM = 64 };
	long old_peers, old_mem, per_peer;
	struct ibv_qp *qps[ROOM], *qp;
	struct peer_stats ps, ps0;
	const char *prefix;
	int n, err, i, fit;

	if (argc != 5)
		tap_bail("usage: mr_limits peers DEV GIDX PREFIX");
	open_dev(argv[2]);
	set_gid(argv[3]);
	prefix = argv[4];
	old_peers = sysfs_read("max_peers");
	old_mem = sysfs_read("max_peer_mem_mb");
	tap_ok(old_peers > 0 && old_mem > 0,
	       "tunables max_peers (%ld) and max_peer_mem_mb (%ld)", old_peers,
	       old_mem);
	if (old_peers <= 0 || old_mem <= 0)
		return tap_done();
	if (!peer_stats(&ps0))
		tap_bail("no peer accounting line in debugfs");
	if (ps0.connections)
		tap_bail("%s already has %ld peers", dev_name, ps0.connections);

	/* The count. */
	err = sysfs_write("max_peers", LIMIT);
	tap_ok(!err, "max_peers set to %d (%s)", LIMIT, strerror(err));
	n = connect_until_refused(prefix, 1, LIMIT + 1, qps, &err);
	tap_ok(n == LIMIT && err == ENOMEM,
	       "%d QPs connected to %d addresses, then %s (ENOMEM expected at %d)",
	       n, n, n > LIMIT ? "one more" : strerror(err), LIMIT);
	peer_stats(&ps);
	tap_ok(ps.connections == n && ps.refused > ps0.refused,
	       "debugfs: %ld peers, %ld refused", ps.connections, ps.refused);
	/* One QP goes: its peer, unused, is the one freed for the next. */
	if (n) {
		ibv_destroy_qp(qps[0]);
		qps[0] = connected_qp(prefix, 100, &err);
		peer_stats(&ps);
		tap_ok(qps[0] && ps.connections == n &&
		       ps.evicted == ps0.evicted + 1,
		       "a QP gone, a new address connects (%s): %ld peers, %ld evicted",
		       qps[0] ? "ok" : strerror(err), ps.connections, ps.evicted);
		/* Its own peer is in use: an address already known needs no
		 * room. */
		qp = connected_qp(prefix, 100, &err);
		tap_ok(qp != NULL, "at the limit, a second QP to a known address connects (%s)",
		       qp ? "ok" : strerror(err));
		if (qp)
			ibv_destroy_qp(qp);
	}
	for (i = 0; i < n; i++)
		if (qps[i])
			ibv_destroy_qp(qps[i]);
	err = sysfs_write("max_peers", old_peers);
	if (err)
		tap_bail("restoring max_peers: %s", strerror(err));

	/* The memory: room for a few peers. */
	qp = connected_qp(prefix, 200, &err);
	if (!qp)
		tap_bail("connecting a QP: %s", strerror(err));
	peer_stats(&ps);
	per_peer = ps.connections ? ps.memory / ps.connections : 0;
	ibv_destroy_qp(qp);
	tap_ok(per_peer >= 32768 && per_peer <= 1 << 20,
	       "a peer holds %ld bytes (32 KiB-1 MiB expected)", per_peer);
	if (per_peer < 32768 || per_peer > 1 << 20)
		return tap_done();
	err = sysfs_write("max_peer_mem_mb", 1);
	tap_ok(!err, "max_peer_mem_mb set to 1 (%s)", strerror(err));
	/* The idle peer of address 200 makes room first. */
	fit = (1 << 20) / per_peer;
	n = connect_until_refused(prefix, 300, ROOM, qps, &err);
	tap_ok(n == fit && err == ENOMEM,
	       "%d QPs connected in 1 MiB, then %s (ENOMEM expected after %d)", n,
	       n == ROOM ? "no refusal" : strerror(err), fit);
	peer_stats(&ps);
	tap_ok(ps.memory <= 1 << 20, "debugfs: peers hold %ld bytes", ps.memory);
	for (i = 0; i < n; i++)
		ibv_destroy_qp(qps[i]);
	err = sysfs_write("max_peer_mem_mb", old_mem);
	if (err)
		tap_bail("restoring max_peer_mem_mb: %s", strerror(err));

	/* Out of range. */
	tap_ok(sysfs_write("max_peers", 0) == EINVAL, "max_peers 0 refused");
	tap_ok(sysfs_write("max_peer_mem_mb", 0) == EINVAL,
	       "max_peer_mem_mb 0 refused");
	tap_ok(sysfs_read("max_peers") == old_peers &&
	       sysfs_read("max_peer_mem_mb") == old_mem, "both restored");
	return tap_done();
}

/* --- churn ------------------------------------------------------------------- */

static int cmd_churn(int argc, char **argv)
{
	long n, max_peers, old_peers, k0, k_mid = 0, k_end, peak = 0, kd;
	long slack_kib = 1536, per_peer = 128 * 1024, bound;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge sge;
	struct peer_stats ps;
	char msg[8] = "hello";
	double t0, t;
	int err, i;

	if (argc != 7)
		tap_bail("usage: mr_limits churn DEV GIDX PREFIX N MAX_PEERS");
	open_dev(argv[2]);
	set_gid(argv[3]);
	n = strtol(argv[5], NULL, 0);
	max_peers = strtol(argv[6], NULL, 0);
	if (n <= 0 || n > 60000 || max_peers <= 0)
		tap_bail("bad N or MAX_PEERS");
	old_peers = sysfs_read("max_peers");
	err = old_peers > 0 ? sysfs_write("max_peers", max_peers) : ENOENT;
	tap_ok(!err, "max_peers set to %ld (%s)", max_peers, strerror(err));
	sge.addr = (uintptr_t)msg;
	sge.length = sizeof(msg);
	sge.lkey = 0;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	/* Unsignaled: nothing ever completes it. */
	wr.send_flags = IBV_SEND_INLINE;

	k0 = kmem_kib();
	t0 = now_s();
	for (i = 1; i <= n; i++) {
		struct ibv_qp *qp = connected_qp(argv[4], i, &err);

		if (!qp) {
			tap_ok(false, "iteration %d: connecting: %s", i,
			       strerror(err));
			break;
		}
		if (ibv_post_send(qp, &wr, &bad))
			tap_bail("iteration %d: ibv_post_send: %s", i,
				 strerror(errno));
		/* Let the kernel take the SEND: it is in flight when the
		 * QP goes. */
		usleep(500);
		if (ibv_destroy_qp(qp))
			tap_bail("iteration %d: ibv_destroy_qp: %s", i,
				 strerror(errno));
		/* The peers debugfs lists (with or without the limits). */
		if (i % 64 == 0 || i == n) {
			long np = peer_lines();

			if (np < 0)
				tap_bail("no debugfs peers file");
			if (np > peak)
				peak = np;
		}
		if (i == n / 3)
			k_mid = kmem_kib();
	}
	t = now_s() - t0;
	k_end = kmem_kib();
	if (peer_stats(&ps) && ps.connections)
		per_peer = ps.memory / ps.connections;
	tap_ok(i > n, "%ld QPs created, connected to %ld addresses, used and destroyed in %.1f s",
	       n, n, t);
	tap_ok(peak <= max_peers, "at most %ld peers at a time (limit %ld)",
	       peak, max_peers);
	/*
	 * Bounded: at any time the loop holds at most max_peers peers, and
	 * nothing else that lasts; the last two thirds of the loop add
	 * nothing to what the first third left.
	 */
	bound = slack_kib + max_peers * per_peer / 1024;
	tap_diag("kernel memory: %ld KiB before, %ld after a third of the loop, %ld at its end; %ld bytes per peer",
		 k0, k_mid, k_end, per_peer);
	tap_ok(k_mid - k0 <= bound && k_end - k0 <= bound,
	       "kernel memory above its start: %+ld KiB after a third of the loop, %+ld at its end (%ld at most: %ld peers)",
	       k_mid - k0, k_end - k0, bound, max_peers);
	kd = k_end - k_mid;
	tap_ok(kd <= slack_kib,
	       "kernel memory grew %ld KiB in the last two thirds of the loop (%ld at most)",
	       kd, slack_kib);
	/* Nobody ever answered: every peer goes once unused. */
	t0 = now_s();
	while (peer_lines() > 0 && now_s() - t0 < 30)
		usleep(200000);
	tap_ok(peer_lines() == 0, "no peer left %.1f s after the loop (%ld)",
	       now_s() - t0, peer_lines());
	if (old_peers > 0 && sysfs_write("max_peers", old_peers))
		tap_bail("restoring max_peers");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	/* The same figure as scale.sh's: within 1.5 MiB of the start. */
	t0 = now_s();
	do {
		k_end = kmem_kib();
		if (k_end <= k0 + slack_kib)
			break;
		sleep(1);
	} while (now_s() - t0 < 20);
	tap_ok(k_end <= k0 + slack_kib,
	       "kernel memory back: %ld KiB, was %ld (%+ld)", k_end, k0,
	       k_end - k0);
	return tap_done();
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mr_limits objects|memcg|peers|churn DEV ...\n");
		return 2;
	}
	tap_start();
	if (!strcmp(argv[1], "objects"))
		return cmd_objects(argc, argv);
	if (!strcmp(argv[1], "memcg"))
		return cmd_memcg(argc, argv);
	if (!strcmp(argv[1], "peers"))
		return cmd_peers(argc, argv);
	if (!strcmp(argv[1], "churn"))
		return cmd_churn(argc, argv);
	tap_bail("unknown command %s", argv[1]);
}
