// SPDX-License-Identifier: GPL-2.0
/*
 * Independent random packet loss at ingress (XDP), for emulation on kernels without netem.
 * The probability is fixed at build time: make $(BUILD)/loss_<ppm>.bpf.o (parts per million).
 * Only IPv4/IPv6 packets are dropped, so ARP/ND keep working.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef LOSS_PPM
#define LOSS_PPM 0
#endif

char _license[] SEC("license") = "GPL";

SEC("xdp")
int random_loss(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(0x0800) && eth->h_proto != bpf_htons(0x86DD))
		return XDP_PASS;
	/* prandom in [0, 2^32): drop when below ppm * 2^32 / 10^6 */
	if (bpf_get_prandom_u32() < (__u32)((__u64)LOSS_PPM * 4294967296ULL / 1000000))
		return XDP_DROP;
	return XDP_PASS;
}
