/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCP side channel of the verbs tools, over which they exchange QP
 * numbers, GIDs and keys: the server accepts one connection on @port (any
 * address, IPv6 socket accepting IPv4 too); the client connects to
 * @server:@port, trying every @tries tenths of a second while the server
 * starts. Returns the connected socket, or -1 with @why describing the
 * failure.
 */
#ifndef MR_TOOLS_TCP_LINK_H
#define MR_TOOLS_TCP_LINK_H

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int tcp_link(const char *server, int port, int tries, char *why,
		    size_t why_len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[16];
	int one = 1, fd = -1, ls;

	snprintf(service, sizeof(service), "%d", port);
	if (server) {
		if (getaddrinfo(server, service, &hints, &res)) {
			snprintf(why, why_len, "cannot resolve %s", server);
			return -1;
		}
		for (int t = 0; t < tries && fd < 0; t++) {
			for (ai = res; ai; ai = ai->ai_next) {
				fd = socket(ai->ai_family, SOCK_STREAM, 0);
				if (fd >= 0 &&
				    !connect(fd, ai->ai_addr, ai->ai_addrlen))
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
			snprintf(why, why_len, "cannot connect to %s:%d",
				 server, port);
		return fd;
	}
	hints.ai_flags = AI_PASSIVE;
	hints.ai_family = AF_INET6;
	if (getaddrinfo(NULL, service, &hints, &res)) {
		snprintf(why, why_len, "getaddrinfo");
		return -1;
	}
	ls = socket(res->ai_family, SOCK_STREAM, 0);
	if (ls >= 0)
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, res->ai_addr, res->ai_addrlen) ||
	    listen(ls, 1)) {
		snprintf(why, why_len, "listen on %d: %s", port,
			 strerror(errno));
		freeaddrinfo(res);
		if (ls >= 0)
			close(ls);
		return -1;
	}
	freeaddrinfo(res);
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		snprintf(why, why_len, "accept: %s", strerror(errno));
	close(ls);
	return fd;
}

#endif
