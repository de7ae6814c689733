// SPDX-License-Identifier: Apache-2.0
//
// XDP fast path as the "hardware" of Hairpin's offload planner (`--offload PROFILE:xdp`):
// the hardware tables of the `xdp-veth` profile, held in BPF maps by the daemon.
//
// A frame is parsed into the fields the tables match (Ethernet, one VLAN tag, IPv4 and its
// TCP/UDP/SCTP ports); the ACL is looked up first, then the MAC table (exact on destination
// MAC and VLAN). The ACL is an ordered list, as a TCAM is, kept as a tuple space: its entries
// grouped by mask, one hash per mask, each entry with its rank in the list; a frame takes
// the matching entry of lowest rank (the TCAM's first hit) in one probe per mask. A deciding entry
// forwards the frame with XDP_REDIRECT through the port map, or drops it; anything else goes
// up to the daemon (XDP_PASS): an entry that punts, no entry, a frame the parser does not
// take whole (two VLAN tags, IPv6, an IPv4 fragment or options it cannot see past, a short
// frame), an ingress port that does not receive, an output port that does not forward.
// Counters (per entry, per port, for table 0) count decided frames only: the daemon adds them
// to the flows', ports' and table's counters, which software counts for the rest.
//
// The ACL exists twice (the `half` in its keys and masks); the daemon writes the half not in
// use and then flips `config[0]`, so a frame never sees half an update. Key words (must match
// hairpind's packing):
//   w0 = in_port << 32 | eth_type << 16 | vlan_vid
//   w1 = eth_dst << 16 | ip_proto << 8
//   w2 = eth_src << 16
//   w3 = ipv4_src << 32 | ipv4_dst
//   w4 = tp_src << 16 | tp_dst
//
// Compiled by build.rs with `clang -target bpf -O2 -g`; loaded with aya.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ACL_MAX 4096
#define TUPLES_MAX 32
#define MAC_MAX 65536
#define SLOTS (ACL_MAX * 2 + MAC_MAX)
#define PORTS_MAX 256
#define KEY_WORDS 5
#define OFPVID_PRESENT 0x1000

enum action { ACT_PASS = 0, ACT_FORWARD = 1, ACT_DROP = 2 };

struct acl_key {
	__u32 half;
	__u32 tuple;
	__u64 w[KEY_WORDS];
};

struct acl_value {
	__u32 rank;
	__u32 action;
	__u32 port;
	__u32 slot;
};

struct acl_mask {
	__u64 w[KEY_WORDS];
};

struct mac_key {
	__u8 eth_dst[6];
	__u16 vlan_vid;
};

struct mac_value {
	__u32 action;
	__u32 port;
	__u32 slot;
	__u32 pad;
};

struct counter {
	__u64 packets;
	__u64 bytes;
};

struct port_counter {
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 tx_packets;
	__u64 tx_bytes;
};

/* config[0]: the ACL half in use (0 or 1); config[1], config[2]: masks in each half. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ACL_MAX * 2);
	__type(key, struct acl_key);
	__type(value, struct acl_value);
} acl SEC(".maps");

/* Masks of the ACL's tuples: half * TUPLES_MAX + tuple. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TUPLES_MAX * 2);
	__type(key, __u32);
	__type(value, struct acl_mask);
} acl_masks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAC_MAX);
	__type(key, struct mac_key);
	__type(value, struct mac_value);
} mac SEC(".maps");

/* Receiving interfaces: ifindex -> OpenFlow port number. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PORTS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} in_ports SEC(".maps");

/* Forwarding ports: OpenFlow port number -> interface. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, PORTS_MAX);
	__type(key, __u32);
	__type(value, struct bpf_devmap_val);
} out_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, struct counter);
} stats SEC(".maps");

/* Per OpenFlow port number (below PORTS_MAX). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PORTS_MAX);
	__type(key, __u32);
	__type(value, struct port_counter);
} port_stats SEC(".maps");

struct pkt {
	__u64 w[KEY_WORDS];
	__u8 eth_dst[6];
	__u16 vlan_vid;
};

static __always_inline __u64 mac48(const __u8 *m)
{
	return ((__u64)m[0] << 40) | ((__u64)m[1] << 32) | ((__u64)m[2] << 24) |
	       ((__u64)m[3] << 16) | ((__u64)m[4] << 8) | (__u64)m[5];
}

/* Fills `p` from the frame; 0 when the frame is one the fast path takes whole. */
static __always_inline int parse(void *data, void *end, __u32 in_port, struct pkt *p)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return -1;
	__u16 proto = bpf_ntohs(eth->h_proto);
	__u16 vid = 0;
	void *l3 = eth + 1;
	if (proto == ETH_P_8021Q || proto == ETH_P_8021AD) {
		__u16 *tag = l3;
		if ((void *)(tag + 2) > end)
			return -1;
		vid = OFPVID_PRESENT | (bpf_ntohs(tag[0]) & 0x0fff);
		proto = bpf_ntohs(tag[1]);
		l3 = tag + 2;
		if (proto == ETH_P_8021Q || proto == ETH_P_8021AD)
			return -1;
	}
	/* Headers the software parser reads and these tables cannot see: software's. */
	if (proto == ETH_P_IPV6 || proto == ETH_P_MPLS_UC || proto == ETH_P_MPLS_MC ||
	    proto == 0x88e7 || proto < 0x0600)
		return -1;
	__u8 ip_proto = 0;
	__u32 src = 0, dst = 0;
	__u16 sport = 0, dport = 0;
	if (proto == 0x0806 && l3 + 28 > end)
		return -1;
	if (proto == ETH_P_IP) {
		struct iphdr *ip = l3;
		if ((void *)(ip + 1) > end || ip->ihl < 5 || ip->version != 4)
			return -1;
		__u32 hlen = ip->ihl * 4;
		__u32 total = bpf_ntohs(ip->tot_len);
		if (total < hlen || (void *)ip + total > end)
			return -1;
		if (ip->frag_off & bpf_htons(0x3fff))
			return -1;
		ip_proto = ip->protocol;
		src = bpf_ntohl(ip->saddr);
		dst = bpf_ntohl(ip->daddr);
		/* The transport header must lie whole inside the IP packet, as software wants it. */
		__u32 need = ip_proto == 6 ? 20 : ip_proto == 17 ? 8 : ip_proto == 132 ? 12 :
			     ip_proto == 1 ? 4 : 0;
		if (hlen + need > total)
			return -1;
		if (ip_proto == 1 || ip_proto == 6 || ip_proto == 17 || ip_proto == 132) {
			__u8 *l4 = (void *)ip + hlen;
			if ((void *)(l4 + 20) > end && ip_proto == 6)
				return -1;
			if ((void *)(l4 + 4) > end)
				return -1;
			if (ip_proto == 6 && (void *)(l4 + 13) <= end && (l4[12] >> 4) < 5)
				return -1;
			if (ip_proto != 1) {
				sport = ((__u16)l4[0] << 8) | l4[1];
				dport = ((__u16)l4[2] << 8) | l4[3];
			}
		}
	}
	p->w[0] = ((__u64)in_port << 32) | ((__u64)proto << 16) | vid;
	p->w[1] = (mac48(eth->h_dest) << 16) | ((__u64)ip_proto << 8);
	p->w[2] = mac48(eth->h_source) << 16;
	p->w[3] = ((__u64)src << 32) | dst;
	p->w[4] = ((__u64)sport << 16) | dport;
	__builtin_memcpy(p->eth_dst, eth->h_dest, 6);
	p->vlan_vid = vid;
	return 0;
}

static __always_inline void count(__u32 slot, __u32 in_port, __u32 out_port, __u64 bytes)
{
	struct counter *c = bpf_map_lookup_elem(&stats, &slot);
	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	struct port_counter *rx = bpf_map_lookup_elem(&port_stats, &in_port);
	if (rx) {
		rx->rx_packets++;
		rx->rx_bytes += bytes;
	}
	if (out_port) {
		struct port_counter *tx = bpf_map_lookup_elem(&port_stats, &out_port);
		if (tx) {
			tx->tx_packets++;
			tx->tx_bytes += bytes;
		}
	}
}

static __always_inline int decide(struct xdp_md *ctx, __u32 action, __u32 port, __u32 slot,
				  __u32 in_port, __u64 bytes)
{
	if (action == ACT_DROP) {
		count(slot, in_port, 0, bytes);
		return XDP_DROP;
	}
	if (action != ACT_FORWARD || port == in_port || port >= PORTS_MAX)
		return XDP_PASS;
	/* Only ports that forward are in the map: a missing one leaves the frame to software. */
	if (!bpf_map_lookup_elem(&out_ports, &port))
		return XDP_PASS;
	count(slot, in_port, port, bytes);
	return bpf_redirect_map(&out_ports, port, XDP_PASS);
}

SEC("xdp")
int hairpin_offload(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 bytes = end - data;
	__u32 ifindex = ctx->ingress_ifindex;
	__u32 *in_port = bpf_map_lookup_elem(&in_ports, &ifindex);
	if (!in_port || *in_port >= PORTS_MAX)
		return XDP_PASS;
	__u32 port_no = *in_port;
	struct pkt p = {};
	if (parse(data, end, port_no, &p))
		return XDP_PASS;
	__u32 zero = 0;
	__u32 *active = bpf_map_lookup_elem(&config, &zero);
	if (!active)
		return XDP_PASS;
	__u32 half = *active & 1;
	__u32 len_key = 1 + half;
	__u32 *len = bpf_map_lookup_elem(&config, &len_key);
	if (!len)
		return XDP_PASS;
	__u32 n = *len;
	struct acl_key k = { .half = half };
	struct acl_value *best = 0;
	/* One probe per mask; the lowest rank among the hits is the TCAM's first match. */
#pragma clang loop unroll(disable)
	for (__u32 t = 0; t < TUPLES_MAX; t++) {
		if (t >= n)
			break;
		__u32 mi = half * TUPLES_MAX + t;
		struct acl_mask *m = bpf_map_lookup_elem(&acl_masks, &mi);
		if (!m)
			return XDP_PASS;
		k.tuple = t;
#pragma unroll
		for (int i = 0; i < KEY_WORDS; i++)
			k.w[i] = p.w[i] & m->w[i];
		struct acl_value *v = bpf_map_lookup_elem(&acl, &k);
		if (v && (!best || v->rank < best->rank))
			best = v;
	}
	if (best)
		return decide(ctx, best->action, best->port, best->slot, port_no, bytes);
	struct mac_key mk = { .vlan_vid = p.vlan_vid };
	__builtin_memcpy(mk.eth_dst, p.eth_dst, 6);
	struct mac_value *m = bpf_map_lookup_elem(&mac, &mk);
	if (!m)
		return XDP_PASS;
	return decide(ctx, m->action, m->port, m->slot, port_no, bytes);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
