/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bench tracer's histogram buckets, shared by the BPF program (trace.bpf.c) and a host
 * test (host.c). Values are nanoseconds. Below 8 ns every value has its own bucket; above,
 * every power of two [2^e, 2^(e+1)) is cut into 8 equal sub-buckets, so a bucket is at most
 * 1/8 of its lower edge wide (12.5 %). Values of 2^(TRACE_MAX_EXP+1) ns (about 37 minutes) and
 * more share the last bucket. The Rust side (mod.rs) holds the inverse: each bucket's edges.
 */
#ifndef LAB_TRACE_HIST_H
#define LAB_TRACE_HIST_H

#define TRACE_SUB_BITS 3
#define TRACE_SUB (1 << TRACE_SUB_BITS)
#define TRACE_MAX_EXP 40
#define TRACE_BUCKETS (TRACE_SUB + (TRACE_MAX_EXP - TRACE_SUB_BITS + 1) * TRACE_SUB)

/* The index of the highest set bit of v (v > 0), by halving: no loop for the verifier. */
static __always_inline int trace_msb(unsigned long long v)
{
	int r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* The bucket of a value: its exponent picks the octave, the next 3 bits the sub-bucket. */
static __always_inline unsigned int trace_bucket(unsigned long long v)
{
	int e;

	if (v < TRACE_SUB)
		return (unsigned int)v;
	e = trace_msb(v);
	if (e > TRACE_MAX_EXP)
		return TRACE_BUCKETS - 1;
	return TRACE_SUB + (e - TRACE_SUB_BITS) * TRACE_SUB +
	       (unsigned int)((v >> (e - TRACE_SUB_BITS)) & (TRACE_SUB - 1));
}

#endif /* LAB_TRACE_HIST_H */
