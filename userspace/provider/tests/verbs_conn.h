/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Connecting the live-device verbs tests: a TCP connection to the peer
 * program (to exchange QP numbers, GIDs and keys), and an RC QP taken from
 * RESET through INIT and RTR to RTS.
 */
#ifndef VERBS_CONN_H
#define VERBS_CONN_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs_common.h"

/* Sends (@out) or receives all @len bytes, else bails out. */
static inline void sock_all(int fd, void *p, size_t len, bool out)
{
	uint8_t *c = p;

	while (len) {
		ssize_t n = out ? send(fd, c, len, MSG_NOSIGNAL) :
				  recv(fd, c, len, 0);

		if (n <= 0)
			tap_bail("the peer went away (%s)",
				 n ? strerror(errno) : "EOF");
		c += n;
		len -= (size_t)n;
	}
}

/* Listens on TCP @port and accepts one client within 60 s. */
static inline int tcp_server(uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	struct pollfd pfd;
	int one = 1, lfd, fd;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
		tap_bail("cannot listen on TCP port %u: %s", port,
			 strerror(errno));
	pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
	if (poll(&pfd, 1, 60000) != 1)
		tap_bail("no client within 60 s");
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		tap_bail("accept: %s", strerror(errno));
	close(lfd);
	return fd;
}

/* Connects to @host:@port, trying for 30 s. */
static inline int tcp_client(const char *host, uint16_t port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	double deadline = now_sec() + 30;
	int fd;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		tap_bail("bad IPv4 address %s", host);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			tap_bail("socket: %s", strerror(errno));
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		if (now_sec() > deadline)
			tap_bail("cannot connect to %s:%u: %s", host, port,
				 strerror(errno));
		usleep(100000);
	}
}

/* Where and how an RC QP connects (port 1, RoCE v2 GIDs). */
struct rc_path {
	enum ibv_mtu mtu;
	int sgid_index;			/* ours */
	union ibv_gid dgid;		/* the peer's */
	uint32_t dest_qpn;
	uint32_t psn;			/* both directions start here */
	unsigned int access;		/* IBV_ACCESS_REMOTE_* granted */
	uint8_t rd_atomic;		/* both max_rd_atomic and max_dest_... */
	uint8_t timeout, retry_cnt, rnr_retry;
	uint8_t min_rnr_timer;
};

/* RC QP @qp from INIT to RTR along @p: 0 or ibv_modify_qp()'s errno. */
static inline int rc_path_rtr(struct ibv_qp *qp, const struct rc_path *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = p->mtu,
		.dest_qp_num = p->dest_qpn,
		.rq_psn = p->psn,
		.max_dest_rd_atomic = p->rd_atomic,
		.min_rnr_timer = p->min_rnr_timer,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = {
				.dgid = p->dgid,
				.sgid_index = (uint8_t)p->sgid_index,
				.hop_limit = 64,
			},
		},
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

/* RC QP @qp from RTR to RTS along @p: 0 or ibv_modify_qp()'s errno. */
static inline int rc_path_rts(struct ibv_qp *qp, const struct rc_path *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = p->psn,
		.timeout = p->timeout,
		.retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry,
		.max_rd_atomic = p->rd_atomic,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * Takes RC QP @qp from RESET to RTS along @p. Returns 0 or the errno
 * value of the ibv_modify_qp() that failed.
 */
static inline int rc_connect(struct ibv_qp *qp, const struct rc_path *p)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = p->access,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (!ret)
		ret = rc_path_rtr(qp, p);
	if (!ret)
		ret = rc_path_rts(qp, p);
	return ret;
}

#endif /* VERBS_CONN_H */
