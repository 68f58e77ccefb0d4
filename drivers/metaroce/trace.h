/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of metaroce.ko (events/metaroce/ in tracefs; perf trace -e
 * 'metaroce:*', trace-cmd record -e metaroce): what the transport engine
 * reports of a connection (struct mr_env_ops.trace: path state changes and
 * port re-picks, timeouts, retransmissions, the peer's epoch changes) and
 * QPs that fail. Each names the device and the connection's remote
 * address. Documentation/admin-guide.rst, "Tracepoints".
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM metaroce

#if !defined(MR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define MR_TRACE_H

#include <linux/tracepoint.h>

#include "metaroce.h"

DECLARE_EVENT_CLASS(metaroce_conn_event,
	TP_PROTO(const struct mr_peer *peer, int path, u64 a, u64 b),
	TP_ARGS(peer, path, a, b),
	TP_STRUCT__entry(
		__string(dev, dev_name(&peer->dev->ibdev.dev))
		__array(u8, remote, sizeof(struct in6_addr))
		__field(int, path)
		__field(u64, a)
		__field(u64, b)
	),
	TP_fast_assign(
		mr_assign_str(dev, dev_name(&peer->dev->ibdev.dev));
		memcpy(__entry->remote, &peer->addr.remote,
		       sizeof(__entry->remote));
		__entry->path = path;
		__entry->a = a;
		__entry->b = b;
	),
	/* The timeout's; the other events print a and b their own way. */
	TP_printk("dev=%s remote=%pI6c path=%d timeouts=%llu next_rto_ns=%llu",
		  __get_str(dev), __entry->remote, __entry->path, __entry->a,
		  __entry->b)
);

#define mr_show_path_state(state)					\
	__print_symbolic(state, { MR_PATH_GOOD, "good" },		\
			 { MR_PATH_CONGESTED, "congested" },		\
			 { MR_PATH_DEAD, "dead" })

DEFINE_EVENT_PRINT(metaroce_conn_event, metaroce_path_state,
	TP_PROTO(const struct mr_peer *peer, int path, u64 a, u64 b),
	TP_ARGS(peer, path, a, b),
	TP_printk("dev=%s remote=%pI6c path=%d %s -> %s", __get_str(dev),
		  __entry->remote, __entry->path,
		  mr_show_path_state(__entry->a),
		  mr_show_path_state(__entry->b))
);

DEFINE_EVENT_PRINT(metaroce_conn_event, metaroce_path_repick,
	TP_PROTO(const struct mr_peer *peer, int path, u64 a, u64 b),
	TP_ARGS(peer, path, a, b),
	TP_printk("dev=%s remote=%pI6c path=%d sport %llu -> %llu",
		  __get_str(dev), __entry->remote, __entry->path, __entry->a,
		  __entry->b)
);

DEFINE_EVENT(metaroce_conn_event, metaroce_timeout,
	TP_PROTO(const struct mr_peer *peer, int path, u64 a, u64 b),
	TP_ARGS(peer, path, a, b)
);

DEFINE_EVENT_PRINT(metaroce_conn_event, metaroce_retransmit,
	TP_PROTO(const struct mr_peer *peer, int path, u64 a, u64 b),
	TP_ARGS(peer, path, a, b),
	TP_printk("dev=%s remote=%pI6c path=%d dsn=%llu cause=%s",
		  __get_str(dev), __entry->remote, __entry->path, __entry->a,
		  __print_symbolic(__entry->b, { MR_RETX_SACK, "sack" },
				   { MR_RETX_RTO, "rto" },
				   { MR_RETX_OVERDUE, "overdue" }))
);

DEFINE_EVENT_PRINT(metaroce_conn_event, metaroce_epoch,
	TP_PROTO(const struct mr_peer *peer, int path, u64 a, u64 b),
	TP_ARGS(peer, path, a, b),
	TP_printk("dev=%s remote=%pI6c peer epoch %#llx -> %#llx",
		  __get_str(dev), __entry->remote, __entry->a, __entry->b)
);

TRACE_EVENT(metaroce_qp_error,
	TP_PROTO(const struct mr_ibqp *qp, int status),
	TP_ARGS(qp, status),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->dev->ibdev.dev))
		__field(u32, qpn)
		__field(int, status)
	),
	TP_fast_assign(
		mr_assign_str(dev, dev_name(&qp->dev->ibdev.dev));
		__entry->qpn = qp->ibqp.qp_num;
		__entry->status = status;
	),
	TP_printk("dev=%s qpn=%u status=%s", __get_str(dev), __entry->qpn,
		  ib_wc_status_msg(__entry->status))
);

#endif /* MR_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
