// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-network-namespace state: the UDP sockets (IPv4, and IPv6 when the
 * kernel has it) bound to udp_port on every address of the namespace, shared
 * by all devices whose netdev lives there. Opened with the first such device,
 * closed with the last. /proc/net/metaroce shows the namespace's state.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ipv6.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>

#include "metaroce.h"

struct mr_net {
	unsigned int users;	/* devices in this namespace; under mr_lock */
	struct socket *sock4;	/* under mr_lock */
	struct socket *sock6;	/* under mr_lock; NULL without IPv6 */
	/* Packets no device claimed (see receive.c). */
	atomic64_t rx_unmatched;
};

static unsigned int mr_net_id __read_mostly;

/*
 * The socket a device sends from. Stable while the device exists: each
 * device holds a reference on its namespace's sockets.
 */
struct sock *mr_net_sock(struct mr_net *mrn, int family)
{
	struct socket *sock = family == AF_INET ? mrn->sock4 : mrn->sock6;

	return sock ? sock->sk : NULL;
}

static struct socket *mr_sock_open(struct net *net, struct mr_net *mrn,
				   int family)
{
	struct udp_port_cfg cfg = {
		.family = family,
		.local_udp_port = htons(mr_udp_port),
	};
	struct udp_tunnel_sock_cfg tcfg = {
		.sk_user_data = mrn,
		/* Any non-zero type routes datagrams to encap_rcv. */
		.encap_type = 1,
		.encap_rcv = mr_udp_encap_recv,
	};
	struct socket *sock;
	int err;

	if (family == AF_INET) {
		cfg.local_ip.s_addr = htonl(INADDR_ANY);
		cfg.use_udp_checksums = true;
	} else {
		cfg.local_ip6 = in6addr_any;
		cfg.ipv6_v6only = true;
		cfg.use_udp6_tx_checksums = true;
		cfg.use_udp6_rx_checksums = true;
	}

	err = udp_sock_create(net, &cfg, &sock);
	if (err) {
		pr_warn("cannot open UDP%s port %u: %d\n",
			family == AF_INET ? "v4" : "v6", mr_udp_port, err);
		return ERR_PTR(err);
	}
	setup_udp_tunnel_sock(net, sock->sk, &tcfg);
	/*
	 * The device hands its own multicast members their copy of what it
	 * sends (mr_mcast_loop()): IP must not loop it back too. The tunnel
	 * set-up turned that off for IPv4 only.
	 */
	if (family == AF_INET6) {
		int zero = 0;

		err = sock->ops->setsockopt(sock, SOL_IPV6,
					    IPV6_MULTICAST_LOOP,
					    KERNEL_SOCKPTR(&zero),
					    sizeof(zero));
		if (err) {
			udp_tunnel_sock_release(sock->sk);
			return ERR_PTR(err);
		}
	}
	return sock;
}

/*
 * Takes a reference on @net's sockets, opening them if this is the first
 * device of the namespace. Returns the namespace state or an ERR_PTR
 * (-EADDRINUSE if something else holds the port).
 */
struct mr_net *mr_net_get(struct net *net)
{
	struct mr_net *mrn = net_generic(net, mr_net_id);
	struct socket *sock4, *sock6 = NULL;

	lockdep_assert_held(&mr_lock);
	if (mrn->users) {
		mrn->users++;
		return mrn;
	}

	sock4 = mr_sock_open(net, mrn, AF_INET);
	if (IS_ERR(sock4))
		return ERR_CAST(sock4);
	if (IS_ENABLED(CONFIG_IPV6) && ipv6_mod_enabled()) {
		sock6 = mr_sock_open(net, mrn, AF_INET6);
		if (IS_ERR(sock6)) {
			udp_tunnel_sock_release(sock4->sk);
			return ERR_CAST(sock6);
		}
	}

	mrn->sock4 = sock4;
	mrn->sock6 = sock6;
	mrn->users = 1;
	return mrn;
}

static void mr_net_close(struct mr_net *mrn)
{
	/* Also clears sk_user_data, which the receive path checks. */
	udp_tunnel_sock_release(mrn->sock4->sk);
	if (mrn->sock6)
		udp_tunnel_sock_release(mrn->sock6->sk);
	mrn->sock4 = NULL;
	mrn->sock6 = NULL;
}

void mr_net_put(struct mr_net *mrn)
{
	lockdep_assert_held(&mr_lock);
	if (WARN_ON(!mrn->users))
		return;
	if (--mrn->users == 0)
		mr_net_close(mrn);
}

void mr_net_count_unmatched(struct mr_net *mrn)
{
	atomic64_inc(&mrn->rx_unmatched);
}

static int __maybe_unused mr_proc_show(struct seq_file *seq, void *v)
{
	struct mr_net *mrn = net_generic(seq_file_single_net(seq), mr_net_id);
	unsigned int users;

	mutex_lock(&mr_lock);
	users = mrn->users;
	mutex_unlock(&mr_lock);

	seq_printf(seq, "udp_port %u\n", mr_udp_port);
	seq_printf(seq, "devices %u\n", users);
	seq_printf(seq, "rx_unmatched %lld\n",
		   (long long)atomic64_read(&mrn->rx_unmatched));
	return 0;
}

static int __net_init mr_net_init_net(struct net *net)
{
	struct mr_net *mrn = net_generic(net, mr_net_id);

	atomic64_set(&mrn->rx_unmatched, 0);
	if (IS_ENABLED(CONFIG_PROC_FS) &&
	    !proc_create_net_single(METAROCE_NAME, 0444, net->proc_net,
				    mr_proc_show, NULL))
		return -ENOMEM;
	return 0;
}

static void __net_exit mr_net_exit_net(struct net *net)
{
	struct mr_net *mrn = net_generic(net, mr_net_id);
	unsigned int users;

	remove_proc_entry(METAROCE_NAME, net->proc_net);

	/*
	 * The namespace's netdevs are gone by now (unregistered, or moved out
	 * as it died): the notifier has queued the unregistration of their
	 * devices. Let those finish; they close the sockets.
	 */
	mutex_lock(&mr_lock);
	users = mrn->users;
	mutex_unlock(&mr_lock);
	if (users)
		flush_workqueue(mr_wq);

	mutex_lock(&mr_lock);
	if (WARN_ON(mrn->users)) {
		/* A kernel socket must not outlive its namespace. */
		mr_net_close(mrn);
		mrn->users = 0;
	}
	mutex_unlock(&mr_lock);
}

static struct pernet_operations mr_net_ops = {
	.init = mr_net_init_net,
	.exit = mr_net_exit_net,
	.id = &mr_net_id,
	.size = sizeof(struct mr_net),
};

int mr_net_init(void)
{
	return register_pernet_subsys(&mr_net_ops);
}

void mr_net_exit(void)
{
	unregister_pernet_subsys(&mr_net_ops);
}
