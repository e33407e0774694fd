// SPDX-License-Identifier: GPL-2.0
/* The tracer's bucket arithmetic (hist.h) compiled for the host, for the Rust tests. */
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#include "hist.h"

unsigned int trace_hist_bucket(unsigned long long v)
{
	return trace_bucket(v);
}

unsigned int trace_hist_buckets(void)
{
	return TRACE_BUCKETS;
}
