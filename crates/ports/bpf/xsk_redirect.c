// SPDX-License-Identifier: Apache-2.0
//
// XDP program of an AF_XDP port: every frame that arrives on a receive queue with
// an AF_XDP socket registered in `xsks` goes to that socket; frames on any other
// queue continue up the kernel stack (the XDP_PASS default of bpf_redirect_map).
//
// Compiled by build.rs with `clang -target bpf -O2 -g`; loaded with aya.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

SEC("xdp")
int hairpin_xsk_redirect(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
