// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fork_exit: fork() and process exit with live RC QPs, between two hosts
 * (prints TAP):
 *
 *   fork_exit fork server DEVICE TCP_PORT
 *   fork_exit fork client DEVICE SERVER_ADDRESS TCP_PORT
 *   fork_exit exit server DEVICE TCP_PORT
 *   fork_exit exit client DEVICE SERVER_ADDRESS TCP_PORT
 *
 * fork: the client calls ibv_fork_init() before opening its device and
 * connects an RC QP (the ring fast path) to the server's. In rounds, it
 * RDMA WRITEs its registered buffer to the server and SENDs its last
 * registered bytes with the round's number; the server checks both, RDMA
 * READs those last bytes back (they share their page with unregistered
 * heap memory) and reports. ibv_fork_init() makes libibverbs MADV_DONTFORK
 * the registered pages; the client gives the last, shared, page back to
 * its children (MADV_DOFORK), so that a child gets a copy of a pinned
 * page. In the middle of one round, with its work requests outstanding,
 * the client forks. The child checks that the parent's ring mappings (the
 * uverbs device file's, found in /proc/self/maps before the fork) are not
 * in it (mincore(): ENOMEM; none in its maps), nor the DONTFORK pages,
 * writes to both halves of its copy of the shared page, opens the device
 * on its own and moves data between two QPs of its own, and reports in its
 * exit status. The parent keeps its rounds going while the child lives
 * (at least 3) and after it exited: every byte the server sees, written,
 * sent or read, is the parent's, no work request fails, the parent's page
 * holds the parent's bytes, and its rings are still mapped.
 *
 * exit: the server forks a process that connects a QP to the client's and
 * streams RDMA WRITEs and SENDs both ways with its send queue full; it is
 * killed with SIGKILL (round 1), or calls _exit(0) with everything alive
 * and outstanding (round 2). The client must see its QP fail in bounded
 * time: the first error is a retry-exceeded completion, every other work
 * request flushes, the QP is in ERR, and a later post is accepted and
 * flushed too. The server checks that the device's resource counts (rdma
 * resource show) show the process's objects while it streams and come
 * back to what they were before it started.
 * Round 3: a new process connects, streams a fixed amount both ways with
 * every byte checked, and releases everything; the counts come back again.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "verbs_conn.h"

#define PAGE 4096
#define TIMEOUT 30.0	/* seconds any one step may take (TCG is slow) */

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
};

struct info {
	uint32_t magic;
	uint32_t qpn;
	uint32_t rkey;
	uint32_t pad;
	uint64_t addr;
	union ibv_gid gid;
};

#define INFO_MAGIC 0x6d72666bu

static uint8_t pattern_byte(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 29 + i * 131 + (i >> 9) + 1);
}

static void fill(uint8_t *p, size_t len, uint32_t seed, size_t from)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern_byte(seed, from + i);
}

/* Index of the first byte of @p that is not the pattern, or -1. */
static long check(const uint8_t *p, size_t len, uint32_t seed, size_t from)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern_byte(seed, from + i))
			return (long)i;
	return -1;
}

/* Opens device @name, a PD, @len bytes of which the first @reg registered. */
static void open_ep(struct ep *e, const char *name, size_t len, size_t reg,
		    unsigned int access)
{
	struct ibv_port_attr port;

	e->ctx = open_device_gid(name, &e->gid, &e->gid_index);
	if (ibv_query_port(e->ctx, 1, &port))
		tap_bail("cannot query %s: %s", name, strerror(errno));
	e->mtu = port.active_mtu;
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = aligned_alloc(PAGE, len);
	if (!e->pd || !e->buf)
		tap_bail("no PD or memory");
	memset(e->buf, 0, len);
	e->mr = ibv_reg_mr(e->pd, e->buf, reg, access);
	if (!e->mr)
		tap_bail("ibv_reg_mr: %s", errname(errno));
}

static void make_qp(struct ep *e, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { sq, rq, 1, 1, 0 },
	};

	e->cq = ibv_create_cq(e->ctx, (int)(2 * (sq + rq)), NULL, NULL, 0);
	if (!e->cq)
		tap_bail("ibv_create_cq: %s", errname(errno));
	ia.send_cq = ia.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		tap_bail("ibv_create_qp: %s", errname(errno));
}

static struct info my_info(const struct ep *e)
{
	return (struct info){
		.magic = INFO_MAGIC,
		.qpn = e->qp->qp_num,
		.rkey = e->mr->rkey,
		.addr = (uintptr_t)e->buf,
		.gid = e->gid,
	};
}

static void recv_info(int sock, struct info *peer)
{
	sock_all(sock, peer, sizeof(*peer), false);
	if (peer->magic != INFO_MAGIC)
		tap_bail("the peer speaks another protocol");
}

static int connect_ep(struct ep *e, const union ibv_gid *dgid, uint32_t qpn)
{
	const struct rc_path p = {
		.mtu = e->mtu,
		.sgid_index = e->gid_index,
		.dgid = *dgid,
		.dest_qpn = qpn,
		.psn = 0x4321,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.rd_atomic = 4,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 12,
	};

	return rc_connect(e->qp, &p);
}

static int post_recv(struct ep *e, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

/* One signaled work request: @op of @len bytes from our @off. */
static int post_op(struct ep *e, enum ibv_wr_opcode op, uint64_t wr_id,
		   size_t off, uint32_t len, const struct info *peer,
		   size_t peer_off, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)e->buf + off, len, e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm),
	}, *bad;

	if (op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM) {
		wr.wr.rdma.remote_addr = peer->addr + peer_off;
		wr.wr.rdma.rkey = peer->rkey;
	}
	return ibv_post_send(e->qp, &wr, &bad);
}

static void destroy_ep(struct ep *e)
{
	if (e->qp && ibv_destroy_qp(e->qp))
		tap_bail("ibv_destroy_qp: %s", errname(errno));
	if (e->cq && ibv_destroy_cq(e->cq))
		tap_bail("ibv_destroy_cq: %s", errname(errno));
	e->qp = NULL;
	e->cq = NULL;
}

static void close_ep(struct ep *e)
{
	destroy_ep(e);
	if (ibv_dereg_mr(e->mr) || ibv_dealloc_pd(e->pd) ||
	    ibv_close_device(e->ctx))
		tap_bail("cannot release the MR, PD or device");
	free(e->buf);
}

/* Releases everything, as close_ep(), but says whether every verb worked. */
static bool release_ep(struct ep *e)
{
	int err = 0;

	if (e->qp)
		err |= ibv_destroy_qp(e->qp);
	if (e->cq)
		err |= ibv_destroy_cq(e->cq);
	e->qp = NULL;
	e->cq = NULL;
	err |= ibv_dereg_mr(e->mr);
	err |= ibv_dealloc_pd(e->pd);
	err |= ibv_close_device(e->ctx);
	free(e->buf);
	return !err;
}

/* Waits up to @timeout s for @fd to be readable. */
static bool readable(int fd, double timeout)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, (int)(timeout * 1000)) == 1;
}

/* ======================================================================
 * fork
 * ====================================================================== */

/* The client's buffer: registered but for the second half of its last page. */
#define F_BUF (32 * PAGE)
#define F_MR (F_BUF - PAGE / 2)
#define F_HEAP (PAGE / 2)		/* the unregistered rest of the page */
#define F_TAIL (F_MR - PAGE / 2)	/* the registered half of that page */
#define F_CHUNK (16 << 10)
/* The server's: the client's WRITEs, its SENDs (4 slots), its READs. */
#define S_RECV F_BUF
#define S_READ (S_RECV + 4 * PAGE)
#define S_BUF (S_READ + PAGE)

/*
 * Bits of the child's exit status: what went wrong in it (1 is tap_bail()'s
 * status, which a failed verb in open_ep() or close_ep() ends with).
 */
enum {
	CHILD_BAILED = 1,
	CHILD_RING_MAPPED = 2,	/* a parent's ring answers mincore() */
	CHILD_MAPS_UVERBS = 4,	/* /proc/self/maps lists the device file */
	CHILD_PAGE = 8,		/* its copy of the shared page misbehaved */
	CHILD_OPEN = 16,	/* could not open the device on its own */
	CHILD_TRAFFIC = 32,	/* its own QPs did not carry its data */
	CHILD_DONTFORK = 64,	/* registered pages there or not, unlike smaps said */
};

struct span {
	uintptr_t start, end;
};

/* The mappings of the uverbs device files (the rings) in this process. */
static unsigned int uverbs_maps(struct span *s, unsigned int max)
{
	char line[512], path[256];
	unsigned long a, b;
	unsigned int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		tap_bail("/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &a, &b,
			   path) < 2 ||
		    strncmp(path, "/dev/infiniband/uverbs", 22))
			continue;
		if (n < max)
			s[n] = (struct span){ a, b };
		n++;
	}
	fclose(f);
	return n;
}

/*
 * Shows the smaps entry (range and VmFlags) of the mapping holding @p;
 * true if a child of fork() does not get it (VM_DONTCOPY, "dc").
 */
static bool vma_dontcopy(const void *p)
{
	char line[512];
	unsigned long a, b;
	bool in = false, dc = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		tap_bail("/proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, ' ') &&
		    line[strcspn(line, " ") - 1] != ':') {
			in = (uintptr_t)p >= a && (uintptr_t)p < b;
			if (in)
				tap_diag("%s", line);
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			tap_diag("%s", line);
			strcat(line, " ");
			dc = strstr(line, " dc ") != NULL;
		}
	}
	fclose(f);
	return dc;
}

/* 0: [@p, @p + @len) is mapped; else the errno of mincore(). */
static int mapped(const void *p, size_t len)
{
	unsigned char vec[64];
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)(PAGE - 1);

	if (len > 64 * PAGE)
		len = 64 * PAGE;
	return mincore((void *)start, len, vec) ? errno : 0;
}

/*
 * The child's own device work: two QPs of its own, connected to each other
 * through its port's GID, carry a SEND and an RDMA WRITE.
 */
static int child_traffic(const char *dev)
{
	struct ep a = {}, b = {};
	struct ibv_wc wc[4];
	struct ibv_device **list;
	struct info ib;
	int bits = 0;

	list = ibv_get_device_list(NULL);
	if (!list || !find_device(list, dev))
		return CHILD_OPEN;
	ibv_free_device_list(list);
	open_ep(&a, dev, 4 * PAGE, 4 * PAGE, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE);
	b = a;			/* same context, PD and MR */
	make_qp(&a, 8, 8);
	make_qp(&b, 8, 8);
	if (connect_ep(&a, &b.gid, b.qp->qp_num) ||
	    connect_ep(&b, &a.gid, a.qp->qp_num))
		return CHILD_OPEN;
	ib = my_info(&b);
	fill(a.buf, PAGE, 77, 0);
	if (post_recv(&b, 1, PAGE, PAGE) ||
	    post_op(&a, IBV_WR_SEND, 2, 0, PAGE, NULL, 0, 0) ||
	    post_op(&a, IBV_WR_RDMA_WRITE, 3, 0, PAGE, &ib, 2 * PAGE, 0))
		return CHILD_TRAFFIC;
	if (poll_n(a.cq, wc, 2, TIMEOUT) != 2 ||
	    wc[0].status != IBV_WC_SUCCESS || wc[1].status != IBV_WC_SUCCESS ||
	    poll_n(b.cq, wc + 2, 1, TIMEOUT) != 1 ||
	    wc[2].status != IBV_WC_SUCCESS || wc[2].byte_len != PAGE ||
	    check(a.buf + PAGE, PAGE, 77, 0) >= 0 ||
	    check(a.buf + 2 * PAGE, PAGE, 77, 0) >= 0)
		bits |= CHILD_TRAFFIC;
	tap_diag("child: its own QPs %u and %u carried a SEND and a WRITE: %s",
		 a.qp->qp_num, b.qp->qp_num, bits ? "no" : "yes");
	destroy_ep(&b);
	b.ctx = NULL;
	close_ep(&a);
	return bits;
}

static int child_main(const struct span *rings, unsigned int nrings,
		      uint8_t *buf, uint8_t *page, bool dontfork, int pipe_w,
		      int pipe_r, const char *dev)
{
	struct span now[8];
	unsigned int i, n;
	int bits = 0, err;
	char c;

	for (i = 0; i < nrings; i++) {
		err = mapped((void *)rings[i].start,
			     rings[i].end - rings[i].start);
		tap_diag("child: parent's ring %#lx-%#lx: mincore() says %s",
			 (unsigned long)rings[i].start,
			 (unsigned long)rings[i].end, errname(err));
		if (err != ENOMEM)
			bits |= CHILD_RING_MAPPED;
	}
	n = uverbs_maps(now, 8);
	if (n)
		bits |= CHILD_MAPS_UVERBS;

	/* The registered pages: not here if ibv_fork_init() DONTFORKed them. */
	err = mapped(buf, PAGE);
	tap_diag("child: the registered buffer's first page %p: mincore() says %s",
		 (void *)buf, errname(err));
	if (err != (dontfork ? ENOMEM : 0))
		bits |= CHILD_DONTFORK;

	/* The page ibv_dofork_range() gave back: a copy, ours to scribble on. */
	err = mapped(page, PAGE);
	tap_diag("child: the shared page %p: mincore() says %s", (void *)page,
		 errname(err));
	if (err)
		_exit(bits | CHILD_PAGE);
	memset(page, 0xc5, PAGE);
	for (i = 0; i < PAGE; i++)
		if (page[i] != 0xc5)
			break;
	if (i != PAGE)
		bits |= CHILD_PAGE;
	if (write(pipe_w, "s", 1) != 1)
		bits |= CHILD_PAGE;

	bits |= child_traffic(dev);
	/* Live until the parent has run rounds alongside. */
	if (!readable(pipe_r, TIMEOUT) || read(pipe_r, &c, 1) != 1)
		bits |= CHILD_PAGE;
	return bits;
}

/*
 * One round of the client: WRITE the registered buffer, SEND its tail, all
 * of them outstanding when @mid (if any) runs; then the completions and the
 * server's verdict. Returns the failures (0 when all is well).
 */
static int fork_round(struct ep *e, int sock, const struct info *peer,
		      uint32_t seed, void (*mid)(void *), void *arg)
{
	struct ibv_wc wc[16];
	unsigned int nwr = 0, i;
	uint8_t verdict;
	int got, bad = 0;
	size_t off;

	fill(e->buf, F_MR, seed, 0);
	fill(e->buf + F_MR, F_HEAP, seed + 1000, 0);
	sock_all(sock, &seed, sizeof(seed), true);
	for (off = 0; off < F_MR; off += F_CHUNK, nwr++) {
		uint32_t len = F_MR - off < F_CHUNK ? F_MR - off : F_CHUNK;

		if (post_op(e, IBV_WR_RDMA_WRITE, nwr, off, len, peer, off, 0))
			tap_bail("ibv_post_send: %s", errname(errno));
	}
	if (post_op(e, IBV_WR_SEND_WITH_IMM, nwr++, F_TAIL, PAGE / 2, peer, 0,
		    seed))
		tap_bail("ibv_post_send: %s", errname(errno));
	if (mid)
		mid(arg);
	got = poll_n(e->cq, wc, (int)nwr, TIMEOUT);
	if (got != (int)nwr) {
		tap_diag("round %u: %d of %u completions", seed, got, nwr);
		bad++;
	}
	for (i = 0; i < (unsigned int)(got > 0 ? got : 0); i++) {
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != i) {
			tap_diag("round %u: completion %u: %s, wr_id %llu", seed,
				 i, ibv_wc_status_str(wc[i].status),
				 (unsigned long long)wc[i].wr_id);
			bad++;
		}
	}
	sock_all(sock, &verdict, 1, false);
	if (verdict) {
		tap_diag("round %u: the server says %#x", seed, verdict);
		bad++;
	}
	return bad;
}

struct forker {
	const struct span *rings;
	unsigned int nrings;
	uint8_t *buf, *page;
	bool dontfork;
	const char *dev;
	int pipe[2];		/* child to parent */
	int back[2];		/* parent to child */
	pid_t pid;
};

static void do_fork(void *arg)
{
	struct forker *f = arg;

	fflush(stdout);
	f->pid = fork();
	if (f->pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (!f->pid) {
		close(f->pipe[0]);
		close(f->back[1]);
		_exit(child_main(f->rings, f->nrings, f->buf, f->page,
				 f->dontfork, f->pipe[1], f->back[0], f->dev));
	}
	close(f->pipe[1]);
	close(f->back[0]);
}

static void fork_client(const char *dev, const char *host, uint16_t port)
{
	struct span rings[8], after[8];
	struct forker f = { .rings = rings, .dev = dev };
	unsigned int nrings, during = 0, bad_before = 0, bad_during = 0;
	unsigned int bad_after = 0, bad_fork, nafter, i;
	enum ibv_fork_status fs;
	struct info peer, mine;
	uint32_t seed = 0;
	struct ep e = {};
	int status = 0xff00, sock, ret;
	char c;

	ret = ibv_fork_init();
	fs = ibv_is_fork_initialized();
	tap_ok(ret == 0, "ibv_fork_init() before opening the device: %s",
	       errname(ret));
	tap_ok(fs == IBV_FORK_ENABLED || fs == IBV_FORK_UNNEEDED,
	       "ibv_is_fork_initialized(): %s", fs == IBV_FORK_UNNEEDED ?
	       "unneeded (the kernel copies pinned pages)" :
	       fs == IBV_FORK_ENABLED ? "enabled" : "disabled");

	open_ep(&e, dev, F_BUF, F_MR, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_READ);
	make_qp(&e, 32, 4);
	f.buf = e.buf;
	f.page = e.buf + F_BUF - PAGE;
	/*
	 * ibv_fork_init() makes libibverbs MADV_DONTFORK registered memory
	 * (rdma-core 44 does, even when the kernel would copy pinned pages):
	 * a child then has none of it. The last page, half registered, half
	 * heap, goes back to being inherited (MADV_DOFORK, what libibverbs'
	 * ibv_dofork_range() does, which only its private header declares),
	 * so that the child gets a copy of a pinned page, the classic hazard.
	 */
	f.dontfork = vma_dontcopy(f.buf);
	tap_diag("the registered buffer is %s", f.dontfork ?
		 "MADV_DONTFORK (not inherited)" : "inherited");
	ret = madvise(f.page, PAGE, MADV_DOFORK) ? errno : 0;
	tap_ok(!ret && !vma_dontcopy(f.page),
	       "MADV_DOFORK on the last page: a child inherits it (%s)",
	       errname(ret));
	sock = tcp_client(host, port);
	mine = my_info(&e);
	sock_all(sock, &mine, sizeof(mine), true);
	recv_info(sock, &peer);
	if (connect_ep(&e, &peer.gid, peer.qpn))
		tap_bail("cannot connect the QP: %s", errname(errno));

	nrings = uverbs_maps(rings, 8);
	f.nrings = nrings < 8 ? nrings : 8;
	tap_ok(nrings >= 2, "the parent maps its rings (%u mappings of the uverbs file)",
	       nrings);

	for (i = 0; i < 3; i++)
		bad_before += fork_round(&e, sock, &peer, ++seed, NULL, NULL);
	tap_ok(!bad_before, "3 rounds before fork(): every byte and completion right");

	if (pipe(f.back))
		tap_bail("pipe: %s", strerror(errno));
	if (pipe(f.pipe))
		tap_bail("pipe: %s", strerror(errno));
	bad_fork = fork_round(&e, sock, &peer, ++seed, do_fork, &f);
	tap_ok(!bad_fork, "the round fork() interrupted with its work requests outstanding completes, data right");

	/* The child wrote to its page: the parent's is still the parent's. */
	tap_ok(readable(f.pipe[0], TIMEOUT) && read(f.pipe[0], &c, 1) == 1,
	       "the child wrote to its copy of the shared page");
	tap_ok(check(f.page, PAGE / 2, seed, F_TAIL) < 0 &&
	       check(f.page + PAGE / 2, F_HEAP, seed + 1000, 0) < 0,
	       "the parent's page (registered and heap halves) holds the parent's bytes");

	while (waitpid(f.pid, &status, WNOHANG) == 0 && during < 200) {
		bad_during += fork_round(&e, sock, &peer, ++seed, NULL, NULL);
		if (++during == 3 && write(f.back[1], "x", 1) != 1)
			tap_bail("the child is gone early");
	}
	if (during == 200 && waitpid(f.pid, &status, 0) != f.pid)
		tap_bail("waitpid: %s", strerror(errno));
	tap_diag("%u rounds while the child lived", during);
	tap_ok(!bad_during, "rounds while the child lived (%u): every byte and completion right",
	       during);
	tap_ok(WIFEXITED(status), "the child exited (status %#x)", status);
	status = WIFEXITED(status) ? WEXITSTATUS(status) : 0xff;
	tap_ok(!(status & CHILD_RING_MAPPED),
	       "child: the parent's ring addresses are not mapped (mincore: ENOMEM)");
	tap_ok(!(status & CHILD_MAPS_UVERBS),
	       "child: /proc/self/maps lists no uverbs mapping");
	tap_ok(!(status & CHILD_DONTFORK), f.dontfork ?
	       "child: the registered pages are not in the child (MADV_DONTFORK)" :
	       "child: it has a copy of the registered pages");
	tap_ok(!(status & CHILD_PAGE),
	       "child: it wrote to both halves of its copy of the shared page, and lived until the parent had run 3 rounds alongside");
	tap_ok(!(status & CHILD_OPEN),
	       "child: opens the device and connects two QPs of its own");
	tap_ok(!(status & CHILD_TRAFFIC),
	       "child: its QPs carry a SEND and an RDMA WRITE, data right");
	tap_ok(!(status & CHILD_BAILED),
	       "child: every verb of its own succeeded, its objects released");

	for (i = 0; i < 5; i++)
		bad_after += fork_round(&e, sock, &peer, ++seed, NULL, NULL);
	tap_ok(!bad_after, "5 rounds after the child exited: every byte and completion right");
	nafter = uverbs_maps(after, 8);
	tap_ok(nafter == nrings && !memcmp(after, rings, sizeof(after[0]) *
					f.nrings),
	       "the parent's ring mappings are all still there");

	seed = 0;
	sock_all(sock, &seed, sizeof(seed), true);
	sock_all(sock, &c, 1, false);
	close(sock);
	tap_ok(release_ep(&e), "the parent releases its QP, CQ, MR, PD and device");
}

static void fork_server(const char *dev, uint16_t port)
{
	unsigned int rounds = 0, bad = 0;
	struct info peer, mine;
	struct ibv_wc wc;
	struct ep e = {};
	uint32_t seed, s;
	int sock, i;
	long at;

	open_ep(&e, dev, S_BUF, S_BUF, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE);
	make_qp(&e, 8, 8);
	sock = tcp_server(port);
	recv_info(sock, &peer);
	if (connect_ep(&e, &peer.gid, peer.qpn))
		tap_bail("cannot connect the QP: %s", errname(errno));
	for (i = 0; i < 4; i++)
		if (post_recv(&e, (uint64_t)i, S_RECV + (size_t)i * PAGE, PAGE))
			tap_bail("ibv_post_recv: %s", errname(errno));
	/* Our receives are posted before the client learns our QP. */
	mine = my_info(&e);
	sock_all(sock, &mine, sizeof(mine), true);

	for (;;) {
		uint8_t v = 0;

		sock_all(sock, &seed, sizeof(seed), false);
		if (!seed)
			break;
		rounds++;
		if (poll_n(e.cq, &wc, 1, TIMEOUT) != 1 ||
		    wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    !(wc.wc_flags & IBV_WC_WITH_IMM) ||
		    ntohl(wc.imm_data) != seed || wc.byte_len != PAGE / 2) {
			tap_diag("round %u: no good receive", seed);
			tap_bail("the client's SEND did not arrive");
		}
		i = (int)wc.wr_id;
		at = check(e.buf, F_MR, seed, 0);
		if (at >= 0) {
			tap_diag("round %u: written byte %ld is %#x", seed, at,
				 e.buf[at]);
			v |= 1;
		}
		at = check(e.buf + S_RECV + (size_t)i * PAGE, PAGE / 2, seed,
			   F_TAIL);
		if (at >= 0) {
			tap_diag("round %u: sent byte %ld is %#x", seed, at,
				 e.buf[S_RECV + (size_t)i * PAGE + (size_t)at]);
			v |= 2;
		}
		memset(e.buf + S_READ, 0, PAGE / 2);
		if (post_op(&e, IBV_WR_RDMA_READ, 100, S_READ, PAGE / 2, &peer,
			    F_TAIL, 0) || poll_n(e.cq, &wc, 1, TIMEOUT) != 1 ||
		    wc.status != IBV_WC_SUCCESS) {
			tap_diag("round %u: the RDMA READ failed", seed);
			v |= 4;
		}
		at = check(e.buf + S_READ, PAGE / 2, seed, F_TAIL);
		if (at >= 0) {
			tap_diag("round %u: read byte %ld is %#x", seed, at,
				 e.buf[S_READ + (size_t)at]);
			v |= 8;
		}
		if (post_recv(&e, (uint64_t)i, S_RECV + (size_t)i * PAGE, PAGE))
			tap_bail("ibv_post_recv: %s", errname(errno));
		bad += v != 0;
		sock_all(sock, &v, 1, true);
	}
	s = 0;
	sock_all(sock, &s, 1, true);
	close(sock);
	tap_ok(rounds >= 12, "the client ran %u rounds", rounds);
	tap_ok(!bad, "every round's WRITE, SEND and READ of the client's memory: the parent's bytes (%u bad)",
	       bad);
	close_ep(&e);
}

/* ======================================================================
 * exit
 * ====================================================================== */

#define X_SQ 64
#define X_RQ 64
#define X_SLOTS 16		/* 4 KiB slots of RDMA WRITE targets */
#define X_MSG 1024		/* SEND size */
#define X_WRITE_AT 0
#define X_RECV_AT (X_SLOTS * PAGE)
#define X_SEND_AT (X_RECV_AT + X_RQ * X_MSG)
#define X_SRC_AT (X_SEND_AT + X_SQ * X_MSG)
#define X_BUF (X_SRC_AT + PAGE)
#define X_WSEED 4242u
#define RECV_TAG (1ull << 63)

enum { K_KILL = 1, K_EXIT, K_CLEAN };

static const char *const kind_name[] = { "", "SIGKILL", "_exit(0)", "clean" };

struct stream {
	struct ep *e;
	struct info peer;
	uint64_t next, limit;		/* work requests posted, and how many */
	unsigned int outstanding, recvs_out;
	uint64_t sends_ok, recvs_ok, recv_bad, errors, flushed;
	uint64_t expect_seq;
	int first_err;			/* the first error's status, or -1 */
	double first_err_at;
	int post_ret;			/* the first failed post's return */
};

static void stream_init(struct stream *s, struct ep *e, uint64_t limit)
{
	*s = (struct stream){ .e = e, .limit = limit, .first_err = -1 };
	fill(e->buf + X_SRC_AT, PAGE, X_WSEED, 0);
}

/* A QP past RESET takes receives: all of them. */
static void stream_recvs(struct stream *s, struct ep *e)
{
	int i;

	for (i = 0; i < X_RQ; i++) {
		if (post_recv(e, RECV_TAG | (uint64_t)i,
			      X_RECV_AT + (size_t)i * X_MSG, X_MSG))
			tap_bail("ibv_post_recv: %s", errname(errno));
		s->recvs_out++;
	}
}

/* Polls what completed, then posts up to a full send queue. */
static void pump(struct stream *s)
{
	struct ibv_wc wc[32];
	int n, i;

	n = ibv_poll_cq(s->e->cq, 32, wc);
	if (n < 0)
		tap_bail("ibv_poll_cq: %d", n);
	for (i = 0; i < n; i++) {
		bool recv = wc[i].wr_id & RECV_TAG;

		if (recv)
			s->recvs_out--;
		else
			s->outstanding--;
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (s->first_err < 0) {
				s->first_err = wc[i].status;
				s->first_err_at = now_sec();
				tap_diag("first error: %s, %s wr_id %#llx",
					 ibv_wc_status_str(wc[i].status),
					 recv ? "receive" : "send",
					 (unsigned long long)wc[i].wr_id);
			} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				s->flushed++;
			}
			s->errors++;
			continue;
		}
		if (!recv) {
			s->sends_ok++;
			continue;
		}
		size_t slot = wc[i].wr_id & ~RECV_TAG;
		uint32_t seq = ntohl(wc[i].imm_data);

		if (wc[i].byte_len != X_MSG || seq != s->expect_seq ||
		    check(s->e->buf + X_RECV_AT + slot * X_MSG, X_MSG, seq, 0)
		    >= 0)
			s->recv_bad++;
		else
			s->recvs_ok++;
		s->expect_seq = seq + 1;
		if (s->first_err < 0 &&
		    !post_recv(s->e, wc[i].wr_id, X_RECV_AT + slot * X_MSG,
			       X_MSG))
			s->recvs_out++;
	}
	while (s->first_err < 0 && !s->post_ret &&
	       s->outstanding < X_SQ && s->next < s->limit) {
		uint64_t k = s->next / 2;
		int ret;

		if (s->next % 2 == 0) {
			ret = post_op(s->e, IBV_WR_RDMA_WRITE, s->next,
				      X_SRC_AT, PAGE, &s->peer,
				      X_WRITE_AT + (k % X_SLOTS) * PAGE, 0);
		} else {
			size_t at = X_SEND_AT + (k % X_SQ) * X_MSG;

			fill(s->e->buf + at, X_MSG, (uint32_t)k, 0);
			ret = post_op(s->e, IBV_WR_SEND_WITH_IMM, s->next, at,
				      X_MSG, &s->peer, 0, (uint32_t)k);
		}
		if (ret) {
			s->post_ret = ret;
			break;
		}
		s->next++;
		s->outstanding++;
	}
}

/* Every RDMA WRITE slot holds what the peer's WRITEs carry. */
static bool writes_here(const struct ep *e)
{
	int i;

	for (i = 0; i < X_SLOTS; i++)
		if (check(e->buf + X_WRITE_AT + (size_t)i * PAGE, PAGE,
			  X_WSEED, 0) >= 0)
			return false;
	return true;
}

/* Connects a stream: the victim speaks first. */
static void connect_stream(struct ep *e, struct stream *s, int sock,
			   bool victim)
{
	struct info mine = my_info(e);
	char c = 'R';

	if (victim) {
		sock_all(sock, &mine, sizeof(mine), true);
		recv_info(sock, &s->peer);
	} else {
		recv_info(sock, &s->peer);
		sock_all(sock, &mine, sizeof(mine), true);
	}
	if (connect_ep(e, &s->peer.gid, s->peer.qpn))
		tap_bail("cannot connect the QP: %s", errname(errno));
	stream_recvs(s, e);
	/* Both in RTS, receives posted, before either sends. */
	sock_all(sock, &c, 1, true);
	sock_all(sock, &c, 1, false);
}

/* Bits of a clean victim's exit status. */
enum { V_ERR = 1, V_DATA = 2, V_TIMEOUT = 4 };

/* The process that dies (or, in the clean round, does not). */
static int victim(const char *dev, int kind, int sock, int pipe_w,
		  int pipe_r, unsigned int clean_msgs)
{
	struct stream s;
	struct ep e = {};
	double deadline;
	bool go = false;
	uint32_t out;
	int bits = 0;
	char c;

	open_ep(&e, dev, X_BUF, X_BUF, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE);
	make_qp(&e, X_SQ, X_RQ);
	stream_init(&s, &e, kind == K_CLEAN ? 2ull * clean_msgs : UINT64_MAX);
	connect_stream(&e, &s, sock, true);

	deadline = now_sec() + 3 * TIMEOUT;
	if (kind != K_CLEAN) {
		while (s.sends_ok < 64 || s.recvs_ok < 16) {
			pump(&s);
			if (s.first_err >= 0 || now_sec() > deadline)
				_exit(100);
		}
		if (write(pipe_w, "S", 1) != 1)
			_exit(101);
		/* Until SIGKILL; for K_EXIT, the word, then a full queue. */
		for (;;) {
			pump(&s);
			if (kind == K_EXIT && !go && readable(pipe_r, 0))
				go = read(pipe_r, &c, 1) == 1;
			if (go && s.outstanding == X_SQ) {
				out = s.outstanding;
				if (write(pipe_w, &out, sizeof(out)) !=
				    sizeof(out))
					_exit(102);
				_exit(0);
			}
		}
	}
	while ((s.next < s.limit || s.outstanding ||
		s.recvs_ok + s.recv_bad < clean_msgs) && s.first_err < 0) {
		pump(&s);
		if (now_sec() > deadline) {
			bits |= V_TIMEOUT;
			break;
		}
	}
	if (s.first_err >= 0 || s.post_ret)
		bits |= V_ERR;
	if (s.recv_bad || !writes_here(&e))
		bits |= V_DATA;
	/* Last exchange: both verified before either releases its QP. */
	sock_all(sock, &bits, sizeof(bits), true);
	sock_all(sock, &out, sizeof(out), false);
	close_ep(&e);
	return bits;
}

struct counts {
	char text[256];
};

/* The device's line of "rdma resource show", its counts in @c. */
static bool res_counts(const char *dev, struct counts *c)
{
	char line[512], key[64];
	const char *p;
	FILE *f = popen("rdma resource show 2>&1", "r");
	bool found = false;

	if (!f)
		tap_bail("popen: %s", strerror(errno));
	snprintf(key, sizeof(key), " %s: ", dev);
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, key);
		if (!p || found)
			continue;
		snprintf(c->text, sizeof(c->text), "%s", p + strlen(key));
		c->text[strcspn(c->text, "\n")] = 0;
		found = true;
	}
	pclose(f);
	return found;
}

/* The count of @what ("qp", "cq", ...) in @c, or -1. */
static long count_of(const struct counts *c, const char *what)
{
	char key[16];
	const char *p;
	long n;

	snprintf(key, sizeof(key), "%s ", what);
	for (p = c->text; (p = strstr(p, key)); p++)
		if ((p == c->text || p[-1] == ' ') &&
		    sscanf(p + strlen(key), "%ld", &n) == 1)
			return n;
	return -1;
}

/* The process's own context, PD, MR, CQ and QP show in @now. */
static bool counts_one_more(const struct counts *before,
			    const struct counts *now)
{
	static const char *const what[] = { "ctx", "pd", "mr", "cq", "qp" };
	unsigned int i;

	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++)
		if (count_of(before, what[i]) < 0 ||
		    count_of(now, what[i]) != count_of(before, what[i]) + 1)
			return false;
	return true;
}

static void exit_server(const char *dev, uint16_t port,
			unsigned int clean_msgs)
{
	struct counts before = {}, now = {};
	int sock, kind, status, p[2], back[2], bits;
	uint32_t out;
	double t;
	pid_t pid;
	char c;

	sock = tcp_server(port);
	for (kind = K_KILL; kind <= K_CLEAN; kind++) {
		const char *name = kind_name[kind];

		tap_ok(res_counts(dev, &before), "%s: %s's resources before: %s",
		       name, dev, before.text);
		sock_all(sock, &kind, sizeof(kind), true);
		if (pipe(p) || pipe(back))
			tap_bail("pipe: %s", strerror(errno));
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			tap_bail("fork: %s", strerror(errno));
		if (!pid) {
			close(p[0]);
			close(back[1]);
			_exit(victim(dev, kind, sock, p[1], back[0],
				     clean_msgs));
		}
		close(p[1]);
		close(back[0]);
		if (kind != K_CLEAN) {
			tap_ok(readable(p[0], 3 * TIMEOUT) &&
			       read(p[0], &c, 1) == 1 && c == 'S',
			       "%s: the process streams WRITEs and SENDs both ways",
			       name);
			tap_ok(res_counts(dev, &now) && counts_one_more(&before, &now),
			       "%s: meanwhile its context, PD, MR, CQ and QP show: %s",
			       name, now.text);
		}
		if (kind == K_KILL) {
			usleep(300000);
			kill(pid, SIGKILL);
		} else if (kind == K_EXIT) {
			if (write(back[1], "x", 1) != 1)
				tap_bail("the process is gone early");
			tap_ok(readable(p[0], TIMEOUT) &&
			       read(p[0], &out, sizeof(out)) == sizeof(out) &&
			       out == X_SQ,
			       "%s: the process exits with %u work requests outstanding",
			       name, X_SQ);
		}
		if (waitpid(pid, &status, 0) != pid)
			tap_bail("waitpid: %s", strerror(errno));
		close(p[0]);
		close(back[1]);
		if (kind == K_KILL)
			tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			       "%s: the process was killed (status %#x)", name,
			       status);
		else
			tap_ok(WIFEXITED(status) && !WEXITSTATUS(status),
			       "%s: the process exited with 0 (status %#x)", name,
			       status);
		if (kind != K_CLEAN) {
			c = 'G';
			sock_all(sock, &c, 1, true);
		}
		/* The client is done with the round. */
		if (!readable(sock, 3 * TIMEOUT))
			tap_bail("the client did not finish the round");
		sock_all(sock, &c, 1, false);

		t = now_sec();
		while (!res_counts(dev, &now) || strcmp(now.text, before.text)) {
			if (now_sec() > t + TIMEOUT)
				break;
			usleep(100000);
		}
		tap_ok(!strcmp(now.text, before.text),
		       "%s: %s's resources are back to what they were after %.1f s: %s",
		       name, dev, now_sec() - t, now.text);
	}
	bits = 0;
	sock_all(sock, &bits, sizeof(bits), true);
	close(sock);
}

/* The survivor's side of one round. */
static void exit_client_round(struct ep *e, int sock, int kind,
			      unsigned int clean_msgs)
{
	const char *name = kind_name[kind];
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct stream s;
	double gone = 0, deadline;
	int bits = 0, ret;
	char c = 'D';

	make_qp(e, X_SQ, X_RQ);
	memset(e->buf + X_WRITE_AT, 0, X_SLOTS * PAGE);
	stream_init(&s, e, kind == K_CLEAN ? 2ull * clean_msgs : UINT64_MAX);
	connect_stream(e, &s, sock, false);

	deadline = now_sec() + 4 * TIMEOUT;
	if (kind == K_CLEAN) {
		while ((s.next < s.limit || s.outstanding ||
			s.recvs_ok + s.recv_bad < clean_msgs) &&
		       s.first_err < 0 && now_sec() < deadline)
			pump(&s);
		tap_ok(s.first_err < 0 && !s.post_ret && s.sends_ok == s.limit,
		       "%s: all %llu of the WRITEs and SENDs to the new process completed",
		       name, (unsigned long long)s.sends_ok);
		tap_ok(s.recvs_ok == clean_msgs && !s.recv_bad,
		       "%s: its %u SENDs arrived in order, every byte right",
		       name, clean_msgs);
		tap_ok(writes_here(e),
		       "%s: its RDMA WRITEs are all here, every byte right", name);
		sock_all(sock, &bits, sizeof(bits), false);
		sock_all(sock, &bits, sizeof(bits), true);
		tap_ok(!bits, "%s: the new process saw every work request complete and every byte right (%#x)",
		       name, bits);
		destroy_ep(e);
		sock_all(sock, &c, 1, true);
		return;
	}

	/* Stream until the victim's end shows here. */
	while (now_sec() < deadline) {
		pump(&s);
		if (!gone && readable(sock, 0)) {
			sock_all(sock, &c, 1, false);
			gone = now_sec();
			tap_diag("%s: the process is gone; %llu WRITEs and SENDs completed, %llu SENDs received, %u outstanding",
				 name, (unsigned long long)s.sends_ok,
				 (unsigned long long)s.recvs_ok, s.outstanding);
		}
		if (gone && s.first_err >= 0 && !s.outstanding && !s.recvs_out)
			break;
	}
	tap_ok(gone > 0, "%s: the server says the process is gone", name);
	/* The process had 64 of its own complete: 32 SENDs at least. */
	tap_ok(s.sends_ok >= 8 && s.recvs_ok >= 16 && !s.recv_bad,
	       "%s: before that, WRITEs and SENDs completed (%llu), SENDs arrived right (%llu, %llu bad)",
	       name, (unsigned long long)s.sends_ok,
	       (unsigned long long)s.recvs_ok, (unsigned long long)s.recv_bad);
	tap_ok(s.first_err == IBV_WC_RETRY_EXC_ERR,
	       "%s: the first error is a transport retry counter exceeded (%s)",
	       name, s.first_err >= 0 ?
	       ibv_wc_status_str((enum ibv_wc_status)s.first_err) : "none");
	tap_ok(s.first_err >= 0 && s.first_err_at - gone < TIMEOUT,
	       "%s: it came %.2f s after the process was gone", name,
	       s.first_err >= 0 ? s.first_err_at - gone : -1.0);
	tap_ok(!s.outstanding && !s.recvs_out && s.flushed == s.errors - 1,
	       "%s: every other send and receive flushed (%llu of %llu, %u and %u left)",
	       name, (unsigned long long)s.flushed,
	       (unsigned long long)s.errors, s.outstanding, s.recvs_out);
	ret = ibv_query_qp(e->qp, &qa, IBV_QP_STATE, &ia);
	tap_ok(!ret && qa.qp_state == IBV_QPS_ERR, "%s: the QP is in ERR (%d)",
	       name, ret ? -1 : (int)qa.qp_state);

	/* A post on the QP in ERR: accepted and flushed, as the verbs say. */
	s.first_err = -1;
	s.errors = s.flushed = 0;
	ret = post_op(e, IBV_WR_RDMA_WRITE, 7, X_SRC_AT, PAGE, &s.peer, 0, 0);
	if (!ret) {
		struct ibv_wc wc;
		int n = poll_n(e->cq, &wc, 1, TIMEOUT);

		tap_ok(n == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 7,
		       "%s: a WRITE posted now completes flushed (%s)", name,
		       n == 1 ? ibv_wc_status_str(wc.status) : "no completion");
	} else {
		tap_ok(false, "%s: a WRITE posted now is refused (%s), not flushed",
		       name, errname(ret));
	}
	destroy_ep(e);
	c = 'D';
	sock_all(sock, &c, 1, true);
}

static void exit_client(const char *dev, const char *host, uint16_t port,
			unsigned int clean_msgs)
{
	struct ep e = {};
	int sock, kind;

	open_ep(&e, dev, X_BUF, X_BUF, IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE);
	sock = tcp_client(host, port);
	for (;;) {
		sock_all(sock, &kind, sizeof(kind), false);
		if (kind < K_KILL || kind > K_CLEAN)
			break;
		exit_client_round(&e, sock, kind, clean_msgs);
	}
	close(sock);
	tap_ok(release_ep(&e), "the client releases its MR, PD and device");
}

int main(int argc, char **argv)
{
	bool server = argc == 5 && !strcmp(argv[2], "server");
	bool client = argc == 6 && !strcmp(argv[2], "client");
	unsigned int clean_msgs = 400;

	if ((!server && !client) ||
	    (strcmp(argv[1], "fork") && strcmp(argv[1], "exit"))) {
		fprintf(stderr,
			"usage: %s fork|exit server DEVICE TCP_PORT\n"
			"       %s fork|exit client DEVICE SERVER_ADDRESS TCP_PORT\n",
			argv[0], argv[0]);
		return 2;
	}
	tap_start();
	if (!strcmp(argv[1], "fork")) {
		if (server)
			fork_server(argv[3], (uint16_t)atoi(argv[4]));
		else
			fork_client(argv[3], argv[4], (uint16_t)atoi(argv[5]));
	} else {
		if (server)
			exit_server(argv[3], (uint16_t)atoi(argv[4]),
				    clean_msgs);
		else
			exit_client(argv[3], argv[4], (uint16_t)atoi(argv[5]),
				    clean_msgs);
	}
	return tap_done();
}
