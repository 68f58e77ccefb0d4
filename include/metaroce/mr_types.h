/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Portability shim for the MetaRoCE transport engine.
 *
 * The engine (drivers/metaroce/core/) is plain C: it is compiled into
 * metaroce.ko and, unchanged, into a userspace library for unit tests, the
 * fuzzer and the fabric simulator. This header is the only place that knows
 * which of the two worlds it is in.
 */
#ifndef METAROCE_MR_TYPES_H
#define METAROCE_MR_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
#include <linux/math64.h>
#include <linux/build_bug.h>

#define MR_STATIC_ASSERT(cond) static_assert(cond, #cond)
static inline u64 mr_div64(u64 a, u64 b)
{
	return div64_u64(a, b);
}
#else
#include <stdint.h>
#include <stddef.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#define MR_STATIC_ASSERT(cond) _Static_assert(cond, #cond)
#ifndef fallthrough
#define fallthrough __attribute__((__fallthrough__))
#endif
static inline u64 mr_div64(u64 a, u64 b)
{
	return a / b;
}
#endif

#define MR_U64_MAX ((u64)~0ULL)
#define MR_U32_MAX ((u32)~0U)

static inline u32 mr_min32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static inline u32 mr_max32(u32 a, u32 b)
{
	return a > b ? a : b;
}

static inline u64 mr_min64(u64 a, u64 b)
{
	return a < b ? a : b;
}

static inline u64 mr_max64(u64 a, u64 b)
{
	return a > b ? a : b;
}

/* Serial-number arithmetic on 32-bit sequence numbers (RFC 1982 style). */
static inline int mr_seq_lt(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

static inline int mr_seq_le(u32 a, u32 b)
{
	return (s32)(a - b) <= 0;
}

/* 24-bit message sequence numbers. */
#define MR_MSN_MASK 0xffffffu
static inline u32 mr_msn_diff(u32 a, u32 b)
{
	return (a - b) & MR_MSN_MASK;
}

static inline int mr_msn_lt(u32 a, u32 b)
{
	return ((a - b) & 0x800000u) && a != b;
}

/* Big-endian field access; the engine never relies on host byte order. */
static inline void mr_put8(u8 *p, u8 v)
{
	p[0] = v;
}

static inline void mr_put16(u8 *p, u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void mr_put32(u8 *p, u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline void mr_put64(u8 *p, u64 v)
{
	mr_put32(p, v >> 32);
	mr_put32(p + 4, (u32)v);
}

static inline u16 mr_get16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static inline u32 mr_get32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static inline u64 mr_get64(const u8 *p)
{
	return (u64)mr_get32(p) << 32 | mr_get32(p + 4);
}

#endif /* METAROCE_MR_TYPES_H */
