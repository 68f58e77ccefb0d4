// SPDX-License-Identifier: GPL-2.0-only
/*
 * The definitions of metaroce.ko's tracepoints (trace.h); peer.c and qp.c
 * fire them.
 */

#define CREATE_TRACE_POINTS
#include "trace.h"
