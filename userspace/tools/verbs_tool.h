/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the two-host verbs tools (mr_integrity, mr_scale, mr_mixed,
 * mr_mcast) share (verbs_tool.c): the TCP side channel over which the two
 * sides exchange QP numbers, PSNs, GIDs and keys and keep in step, opening
 * the device, taking RC QPs from RESET to RTS, finding a QP by its
 * number, and the pause file. Every function ends the program through the
 * tool's die() when something fails.
 */
#ifndef MR_TOOLS_VERBS_TOOL_H
#define MR_TOOLS_VERBS_TOOL_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* Each tool's own: prints what failed (with the tool's name) and exits 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);

/* --- the TCP side channel -------------------------------------------------- */

/*
 * The server (@server NULL) accepts one connection on @port (any address,
 * IPv4 or IPv6); the client connects to @server:@port, trying every tenth
 * of a second, @tries times, while the server starts. Returns the socket.
 */
int vt_link(const char *server, int port, int tries);

/*
 * All @len bytes out, or all in; vt_recv() gives up at @deadline (on the
 * now_s() clock; 0: never).
 */
void vt_send(int fd, const void *p, size_t len);
void vt_recv(int fd, void *p, size_t len, double deadline);

/* Both sides reach point @what (which names it in a failure). */
void vt_sync(int fd, uint32_t what, double deadline);

/*
 * The @n QP numbers and PSNs of this side out, the other side's in (the
 * same number of QPs on each side).
 */
void vt_swap_qps(int fd, const uint32_t *qpn, const uint32_t *psn,
		 uint32_t *rqpn, uint32_t *rpsn, unsigned int n,
		 double deadline);

/* --- verbs ------------------------------------------------------------------ */

/* Opens device @name; NULL: the last one ibv_get_device_list() lists. */
struct ibv_context *vt_open_device(const char *name);

/* GID @gidx of port 1. */
void vt_gid(struct ibv_context *ctx, int gidx, uint8_t gid[16]);

/* Port 1's active MTU. */
enum ibv_mtu vt_active_mtu(struct ibv_context *ctx);

/* A random initial PSN (24 bits). */
uint32_t vt_psn(void);

/* QP #@i: created with @qa and taken to INIT on port 1 with remote @access. */
struct ibv_qp *vt_rc_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qa,
			unsigned int access, unsigned int i);

/* Where and how an RC QP connects to its peer QP. */
struct vt_path {
	enum ibv_mtu mtu;
	int sgid_index;			/* ours, port 1 */
	const uint8_t *dgid;		/* the peer's, 16 bytes */
	uint8_t rd_atomic;		/* max_rd_atomic and max_dest_rd_atomic */
	uint8_t min_rnr_timer;
	uint8_t timeout;		/* retry_cnt and rnr_retry are 7 */
};

/*
 * QP #@i from INIT through RTR (to QP @dqpn, whose first PSN is @dpsn) to
 * RTS (our first PSN @psn), along @p.
 */
void vt_rc_connect(struct ibv_qp *qp, const struct vt_path *p, uint32_t dqpn,
		   uint32_t dpsn, uint32_t psn, unsigned int i);

/* --- finding a QP by its number ----------------------------------------------- */

struct vt_qpn_index {
	unsigned int n;
	struct vt_qpn_slot {
		uint32_t qpn;
		uint32_t idx;
	} *slot;			/* sorted by QP number */
};

/* Indexes the @n QP numbers @qpn (QP i has number qpn[i]). */
void vt_qpn_index(struct vt_qpn_index *x, const uint32_t *qpn, unsigned int n);

/* The index i of the QP with number @qpn, or -1. */
int64_t vt_qpn_find(const struct vt_qpn_index *x, uint32_t qpn);

void vt_qpn_index_free(struct vt_qpn_index *x);

/* --- pausing for the test ------------------------------------------------------- */

/*
 * With a @path (--pause-file), writes @what to it and waits until the test
 * removes it (until @deadline).
 */
void vt_pause(const char *path, const char *what, double deadline);

#endif
