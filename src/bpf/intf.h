/* SPDX-License-Identifier: GPL-2.0-only */
/* Types and constants shared by the BPF scheduler and its Rust side. */
#ifndef __LAB_INTF_H
#define __LAB_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum lab_consts {
	LAB_MAX_CPUS = 512,
};

#endif /* __LAB_INTF_H */
