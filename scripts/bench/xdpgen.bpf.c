// SPDX-License-Identifier: Apache-2.0
//
// The frame generator's XDP program (xdpgen.c runs it with BPF_PROG_RUN in live-frames
// mode): each run rewrites the frame's destination MAC and IPv4 address to the next entry
// of `dests`, round robin, and redirects it out of `config[0]` (an ifindex). Frames so sent
// reach the veth peer as XDP frames, as a NIC's DMA buffers reach its driver: no socket
// buffer on the way in.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct dest {
	__u8 mac[6];
	__u8 pad[2];
	__u8 ip[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct dest);
} dests SEC(".maps");

/* config[0]: ifindex out; config[1]: number of destinations; config[2]: next one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u32);
} config SEC(".maps");

SEC("xdp")
int xdpgen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	if (p + 34 > (__u8 *)end)
		return XDP_ABORTED;
	__u32 k0 = 0, k1 = 1, k2 = 2;
	__u32 *ifindex = bpf_map_lookup_elem(&config, &k0);
	__u32 *count = bpf_map_lookup_elem(&config, &k1);
	__u32 *next = bpf_map_lookup_elem(&config, &k2);
	if (!ifindex || !count || !next || *count == 0)
		return XDP_ABORTED;
	__u32 i = *next % *count;
	*next = i + 1;
	struct dest *d = bpf_map_lookup_elem(&dests, &i);
	if (!d)
		return XDP_ABORTED;
	__builtin_memcpy(p, d->mac, 6);
	__builtin_memcpy(p + 30, d->ip, 4);
	return bpf_redirect(*ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
