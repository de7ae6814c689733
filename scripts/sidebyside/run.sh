#!/usr/bin/env bash
# Side-by-side forwarding benchmark (issue 4): the same veth topology and flows for each switch.
#
#   <prefix>-src (trafgen on CPU 0) --eth0==p1-- <prefix>-sw (switch on CPU 1) --p2==eth0-- <prefix>-dst
#
# 64-byte UDP frames (60 bytes + FCS) to 1K destination MACs. Profiles:
#   port: in_port=1 -> output:2 (and back)     l2: a table of the 1K MACs (+ the two hosts) -> port
# For each switch and profile it reports offered pps (what trafgen pushed into src eth0),
# p1 rx (what entered the switch's input queue), p2 tx (what the switch sent), delivered pps
# (dst eth0 rx), loss, the switch's CPU time (utime+stime from /proc/PID/stat) per million
# delivered packets and the share of it spent in the kernel (sys: stime, e.g. the veth transmit
# into the next namespace that a send runs), and ping p50/p99 idle and under load.
# offered - p1_rx: the kernel's veth backlog was full; p1_rx - p2_tx: lost in the switch's
# socket ring or the switch; p2_tx - delivered: lost on the way out.
#
# Usage: scripts/sidebyside/run.sh [--switches ovs,hairpind] [--profiles port,l2]
#            [--seconds N] [--out DIR]
# A switch is a function start_switch_NAME that starts it in namespace $SW_NS with OpenFlow ports
# 1=p1 and 2=p2, fail mode secure, a passive OpenFlow listener on ptcp:$OF_PORT:127.0.0.1, and
# sets SWITCH_PID. Flows are added through that listener with ovs-ofctl.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=SCRIPTDIR/../lib/netns.sh
source "$HERE/../lib/netns.sh"
# shellcheck source=SCRIPTDIR/../lib/ovs.sh
source "$HERE/../lib/ovs.sh"

SWITCHES=ovs
PROFILES=port,l2
SECONDS_LOAD=10
OUT=${TMPDIR:-/tmp}/hairpin-sidebyside
OF_PORT=16680
MAC_COUNT=1000
SOURCE_CPU=0
SWITCH_CPU=1
PINGS=300
HAIRPIND=${HAIRPIND:-$HP_REPO/target/release/hairpind}

# Prints this file's header comment.
usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit "${1:-0}"
}

while (($#)); do
    case $1 in
        --switches) SWITCHES=$2; shift 2 ;;
        --profiles) PROFILES=$2; shift 2 ;;
        --seconds) SECONDS_LOAD=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h | --help) usage ;;
        *) usage 2 >&2 ;;
    esac
done

start_switch_ovs() {
    ovs_start "$PREFIX" "$SW_NS"
    ovs_add_bridge "$PREFIX" br0 1 p1 p2
    ovs_set_controller "$PREFIX" br0 "ptcp:$OF_PORT:127.0.0.1"
    SWITCH_PID=$(ovs_pid "$PREFIX")
}

start_switch_hairpind() {
    [[ -x $HAIRPIND ]] || hp_die "no hairpind at $HAIRPIND (cargo build --release, or set HAIRPIND)"
    ip netns exec "$SW_NS" "$HAIRPIND" --datapath-id 1 --listen "ptcp:$OF_PORT:127.0.0.1" \
        --port 1=p1 --port 2=p2 --fail-mode secure >"$OUT/hairpind-$PROFILE.log" 2>&1 &
    SWITCH_PID=$!
    hp_on_exit "kill $SWITCH_PID 2>/dev/null; wait $SWITCH_PID 2>/dev/null"
}

mac_of() { ip -n "$1" -o link show "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }
hex_bytes() {
    local -a octets
    IFS=: read -ra octets <<<"$1"
    printf '0x%s, ' "${octets[@]}"
}

# The trafgen config: one 60-byte IPv4/UDP frame per destination MAC, sent round robin.
write_trafgen_config() {
    local src_mac=$1 file=$2 i sum
    # IPv4 header 45 00 002e 0000 4000 40 11 csum 0a000001 0a000002: checksum computed once.
    sum=$((0x4500 + 0x002e + 0x4000 + 0x4011 + 0x0a00 + 0x0001 + 0x0a00 + 0x0002))
    sum=$(((sum & 0xffff) + (sum >> 16)))
    sum=$((~sum & 0xffff))
    local tail
    tail="$(hex_bytes "$src_mac")0x08, 0x00, 0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, "
    tail+=$(printf '0x%02x, 0x%02x, ' $((sum >> 8)) $((sum & 0xff)))
    tail+="10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0x00, 0x00, 0x09, 0x00, 0x1a, 0x00, 0x00, fill(0x00, 18)"
    for ((i = 0; i < MAC_COUNT; i++)); do
        printf '{ 0x02, 0x00, 0x00, 0x00, 0x%02x, 0x%02x, %s }\n' $((i >> 8)) $((i & 0xff)) "$tail"
    done >"$file"
}

write_flows() {
    local profile=$1 src_mac=$2 dst_mac=$3 file=$4 i
    case $profile in
        port) printf 'in_port=1,actions=output:2\nin_port=2,actions=output:1\n' >"$file" ;;
        l2)
            {
                printf 'dl_dst=%s,actions=output:1\ndl_dst=%s,actions=output:2\n' "$src_mac" "$dst_mac"
                for ((i = 0; i < MAC_COUNT; i++)); do
                    printf 'dl_dst=02:00:00:00:%02x:%02x,actions=output:2\n' $((i >> 8)) $((i & 0xff))
                done
            } >"$file"
            ;;
        *) hp_die "unknown profile $profile" ;;
    esac
}

ns_counter() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
# What trafgen pushed into its veth: sent on, or refused by the peer's full backlog.
sent() { echo $(($(ns_counter "$1" eth0 tx_packets) + $(ns_counter "$1" eth0 tx_dropped))); }
# The switch's CPU ticks: user, then system (kernel work done on its behalf, e.g. veth xmit).
cpu_ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }

# ping_percentiles NS ADDR COUNT: prints "p50_us p99_us loss%".
ping_percentiles() {
    local rtts
    rtts=$(ip netns exec "$1" ping -n -i 0.01 -c "$3" -W 1 "$2" 2>/dev/null |
        sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | sort -n)
    [[ -n $rtts ]] || { echo "0 0 100"; return; }
    awk -v count="$3" '{ rtt[NR] = $1 * 1000 }
        END { printf "%d %d %.0f\n", rtt[int((NR - 1) * 0.50) + 1], rtt[int((NR - 1) * 0.99) + 1],
              100 * (count - NR) / count }' <<<"$rtts"
}

# measure SWITCH PROFILE: one fresh topology, one result line.
measure() {
    local switch=$1
    PROFILE=$2
    hp_install_cleanup_trap # this runs in a pipeline's subshell, which does not inherit traps
    PREFIX=$(hp_unique_prefix)
    SW_NS=$PREFIX-sw
    local src=$PREFIX-src dst=$PREFIX-dst src_mac dst_mac
    netns_create "$SW_NS"
    netns_create "$src"
    netns_create "$dst"
    netns_link "$src" eth0 "$SW_NS" p1
    netns_link "$SW_NS" p2 "$dst" eth0
    ip -n "$src" addr add 10.0.0.1/24 dev eth0
    ip -n "$dst" addr add 10.0.0.2/24 dev eth0
    src_mac=$(mac_of "$src" eth0)
    dst_mac=$(mac_of "$dst" eth0)
    ip -n "$src" neigh replace 10.0.0.2 lladdr "$dst_mac" dev eth0 nud permanent
    ip -n "$dst" neigh replace 10.0.0.1 lladdr "$src_mac" dev eth0 nud permanent

    "start_switch_$switch"
    taskset -a -p -c "$SWITCH_CPU" "$SWITCH_PID" >/dev/null
    write_flows "$PROFILE" "$src_mac" "$dst_mac" "$OUT/flows-$PROFILE.txt"
    hp_wait_for 10 ip netns exec "$SW_NS" ovs-ofctl -O OpenFlow13 show "tcp:127.0.0.1:$OF_PORT" ||
        hp_die "$switch: no OpenFlow listener on $OF_PORT"
    ip netns exec "$SW_NS" ovs-ofctl -O OpenFlow13 add-flows "tcp:127.0.0.1:$OF_PORT" "$OUT/flows-$PROFILE.txt"
    # A switch may take a moment after its listener is up before all its ports forward.
    hp_wait_for 10 netns_ping "$src" 10.0.0.2 1 ||
        hp_die "$switch/$PROFILE: no ping through the switch within 10 s (log in $OUT)"
    write_trafgen_config "$src_mac" "$OUT/trafgen.cfg"

    local idle
    idle=$(ping_percentiles "$src" 10.0.0.2 "$PINGS")

    # trafgen forks a sender; its own process group lets one signal stop both, as Ctrl-C would.
    setsid ip netns exec "$src" taskset -c "$SOURCE_CPU" trafgen --dev eth0 --conf "$OUT/trafgen.cfg" \
        --cpus 1 --no-sock-mem --notouch-irq --no-cpu-stats >"$OUT/trafgen-$switch-$PROFILE.log" 2>&1 &
    local trafgen=$!
    hp_on_exit "kill -INT -- -$trafgen 2>/dev/null; wait $trafgen 2>/dev/null"
    sleep 2 # warm-up: rings filled, flows in the switch's caches
    kill -0 "$trafgen" 2>/dev/null || hp_die "trafgen stopped: $(cat "$OUT/trafgen-$switch-$PROFILE.log")"

    local tx0 rx0 in0 out0 usr0 sys0 t0 tx1 rx1 in1 out1 usr1 sys1 t1 loaded
    tx0=$(sent "$src")
    in0=$(ns_counter "$SW_NS" p1 rx_packets)
    out0=$(ns_counter "$SW_NS" p2 tx_packets)
    rx0=$(ns_counter "$dst" eth0 rx_packets)
    read -r usr0 sys0 < <(cpu_ticks "$SWITCH_PID")
    t0=$(date +%s.%N)
    loaded=$(ping_percentiles "$src" 10.0.0.2 "$PINGS")
    sleep "$(awk -v s="$SECONDS_LOAD" -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { r = s - (now - t0); print (r > 0 ? r : 0) }')"
    tx1=$(sent "$src")
    in1=$(ns_counter "$SW_NS" p1 rx_packets)
    out1=$(ns_counter "$SW_NS" p2 tx_packets)
    rx1=$(ns_counter "$dst" eth0 rx_packets)
    read -r usr1 sys1 < <(cpu_ticks "$SWITCH_PID")
    t1=$(date +%s.%N)
    kill -INT -- "-$trafgen" 2>/dev/null || true
    wait "$trafgen" 2>/dev/null || true

    awk -v sw="$switch" -v pr="$PROFILE" -v tx=$((tx1 - tx0)) -v rx=$((rx1 - rx0)) \
        -v swin=$((in1 - in0)) -v swout=$((out1 - out0)) \
        -v usr=$((usr1 - usr0)) -v sys=$((sys1 - sys0)) -v hz="$(getconf CLK_TCK)" -v t0="$t0" -v t1="$t1" \
        -v idle="$idle" -v loaded="$loaded" 'BEGIN {
            dt = t1 - t0; split(idle, i, " "); split(loaded, l, " ")
            cpu = usr + sys
            cpu_per_m = rx > 0 ? (cpu / hz) / (rx / 1e6) : 0
            printf "%-9s %-5s %11.0f %9.0f %9.0f %13.0f %6.1f%% %10.2f %4.0f%% %6d %6d %6d %6d %5s%%\n",
                sw, pr, tx / dt, swin / dt, swout / dt, rx / dt, 100 * (tx - rx) / (tx ? tx : 1),
                cpu_per_m, 100 * sys / (cpu ? cpu : 1), i[1], i[2], l[1], l[2], l[3]
        }'
    hp_run_cleanup
    hp_install_cleanup_trap
}

hp_require_root
command -v trafgen >/dev/null || hp_die "no trafgen: run scripts/setup.sh"
mkdir -p "$OUT"
hp_install_cleanup_trap
IFS=, read -ra switch_list <<<"$SWITCHES"
IFS=, read -ra profile_list <<<"$PROFILES"
for switch in "${switch_list[@]}"; do
    declare -F "start_switch_$switch" >/dev/null || hp_die "unknown switch $switch"
done
hp_log "load ${SECONDS_LOAD}s per run, trafgen on CPU $SOURCE_CPU, switch on CPU $SWITCH_CPU; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %-5s %11s %9s %9s %13s %7s %10s %5s %6s %6s %6s %6s %6s\n' switch flows offered_pps \
    p1_rx_pps p2_tx_pps delivered_pps loss \
    cpu_s/Mpkt sys idle50 idle99 load50 load99 ploss | tee "$OUT/results.txt"
for switch in "${switch_list[@]}"; do
    for profile in "${profile_list[@]}"; do
        measure "$switch" "$profile" | tee -a "$OUT/results.txt"
    done
done
hp_log "ping columns in microseconds (idle, under load); ploss = ping loss under load"
hp_log "results in $OUT/results.txt"
