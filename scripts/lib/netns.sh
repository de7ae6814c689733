# shellcheck shell=bash
# Network namespaces as hosts and veth pairs as cables. Source after common.sh.
# Every namespace made here is registered for deletion on exit (hp_on_exit).

# Run sysctl quietly inside a namespace.
_netns_sysctl() { ip netns exec "$1" sysctl -qw "${@:2}" >/dev/null; }

# netns_create NS: a namespace with loopback up and IPv6 off for every interface made in it.
netns_create() {
    local ns=$1
    ip netns add "$ns"
    hp_on_exit "ip netns del '$ns' 2>/dev/null"
    _netns_sysctl "$ns" net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip -n "$ns" link set lo up
}

# netns_link NS_A IF_A NS_B IF_B: a veth cable between two namespaces, both ends up, IPv6 off,
# transmit checksum offload off (AF_PACKET switches would otherwise forward partial checksums).
netns_link() {
    local ns_a=$1 if_a=$2 ns_b=$3 if_b=$4 end
    ip link add "$if_a" netns "$ns_a" type veth peer name "$if_b" netns "$ns_b"
    for end in "$ns_a:$if_a" "$ns_b:$if_b"; do
        _netns_sysctl "${end%%:*}" "net.ipv6.conf.${end#*:}.disable_ipv6=1"
        ip netns exec "${end%%:*}" ethtool -K "${end#*:}" tx off >/dev/null 2>&1 || true
        ip -n "${end%%:*}" link set "${end#*:}" up
    done
}

# netns_hosts PREFIX SWITCH_NS N [NET]: namespaces PREFIX-h1..hN, each with eth0 at NET.i/24
# (NET defaults to 10.0.0) cabled to port pI in SWITCH_NS (which must exist).
netns_hosts() {
    local prefix=$1 switch_ns=$2 count=$3 net=${4:-10.0.0} i host
    for ((i = 1; i <= count; i++)); do
        host="$prefix-h$i"
        netns_create "$host"
        netns_link "$switch_ns" "p$i" "$host" eth0
        ip -n "$host" addr add "$net.$i/24" dev eth0
    done
}

# netns_ping NS ADDR [COUNT]: quiet ping that succeeds when at least one reply arrives.
netns_ping() { ip netns exec "$1" ping -q -c "${3:-3}" -i 0.2 -W 2 "$2" >/dev/null; }
