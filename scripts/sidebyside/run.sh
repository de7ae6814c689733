#!/usr/bin/env bash
# Side-by-side forwarding benchmark: the same veth topology, flows and traffic for each switch.
#
#   <prefix>-src (trafgen on CPU 0) --eth0==p1-- <prefix>-sw (switch on CPU 1) --p2==eth0-- <prefix>-dst
#
# 64-byte UDP frames (60 bytes + FCS). Profiles:
#   port: in_port=1 -> output:2 (and back), frames to 1K destination MACs
#   l2:   a table of the 1K MACs (+ the two hosts) -> port, the same frames
#   acl:  an allow-list ACL (udp from 10.1.1.1, udp to port 9, udp from port 53; the rest
#         dropped), clean traffic: 64K flows to udp port 9 (sources 10.0.x.y, more flows than
#         OVS's exact-match cache holds)
#   tse:  acl, and beside the clean traffic a second trafgen sends tuple space explosion
#         traffic (Csikor et al., CoNEXT 2019) at --attack-pps: 8K frames that each fail the
#         three allow rules at a different bit (source address bit a, destination port bit b,
#         source port bit c), so that a cache which learns masks from traffic (OVS's megaflows)
#         gets one mask per frame. The ACL drops all of it; delivered is clean traffic only.
# For each switch and profile it reports offered pps (clean traffic trafgen pushed into src
# eth0), p1 rx (what entered the switch's input queue), p2 tx (what the switch sent), delivered
# pps (dst eth0 rx), loss, the switch's CPU time (utime+stime from /proc/PID/stat) per million
# delivered packets and the share of it spent in the kernel (sys: stime, e.g. the veth transmit
# into the next namespace that a send runs), and ping p50/p99 idle and under load.
# offered - p1_rx: the kernel's veth backlog was full; p1_rx - p2_tx: lost in the switch's
# socket ring or the switch; p2_tx - delivered: lost on the way out. With both acl and tse,
# "kept" is each switch's tse delivered rate over its acl one; for OVS, the megaflows and the
# subtables searched per megaflow hit (dpif-netdev/pmd-stats-show) are logged after each run.
#
# Usage: scripts/sidebyside/run.sh [--switches ovs,hairpind] [--profiles port,l2,acl,tse]
#            [--seconds N] [--attack-pps N] [--out DIR]
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
CLEAN_FLOWS=65536
# The destination of the acl and tse frames: a MAC no host owns, so the receiving host counts a
# frame and drops it at once (as with the 1K MACs of port and l2) instead of running its UDP
# stack, which a veth transmit runs on the sending switch's CPU.
SINK_MAC=02:00:00:00:ff:fe
ATTACK_PPS=10000
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
        --attack-pps) ATTACK_PPS=$2; shift 2 ;;
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

# udp_frame DST SRC SRC_IP DST_IP SPORT DPORT: one 60-byte IPv4/UDP frame as a trafgen packet
# line; DST and SRC are MAC addresses as hex_bytes prints them. The IPv4 checksum is computed
# here, the UDP checksum is 0.
udp_frame() {
    local -a src dst
    IFS=. read -ra src <<<"$3"
    IFS=. read -ra dst <<<"$4"
    local sum=$((0x4500 + 0x002e + 0x4000 + 0x4011 + (src[0] << 8 | src[1]) + (src[2] << 8 | src[3]) +
        (dst[0] << 8 | dst[1]) + (dst[2] << 8 | dst[3])))
    sum=$(((sum & 0xffff) + (sum >> 16)))
    sum=$((~sum & 0xffff))
    printf '{ %s%s0x08, 0x00, 0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, ' \
        "$1" "$2"
    printf '0x%02x, 0x%02x, %d, %d, %d, %d, %d, %d, %d, %d, ' $((sum >> 8)) $((sum & 0xff)) \
        "${src[@]}" "${dst[@]}"
    printf '0x%02x, 0x%02x, 0x%02x, 0x%02x, 0x00, 0x1a, 0x00, 0x00, fill(0x00, 18) }\n' \
        $(($5 >> 8)) $(($5 & 0xff)) $(($6 >> 8)) $(($6 & 0xff))
}

# The clean traffic's trafgen config, sent round robin: for port and l2 one frame per destination
# MAC, for acl and tse one flow per source port to udp port 9.
write_trafgen_config() {
    local profile=$1 src dst file=$3 i
    src=$(hex_bytes "$2")
    dst=$(hex_bytes "$SINK_MAC")
    case $profile in
        port | l2)
            for ((i = 0; i < MAC_COUNT; i++)); do
                udp_frame "$(printf '0x02, 0x00, 0x00, 0x00, 0x%02x, 0x%02x, ' $((i >> 8)) $((i & 0xff)))" \
                    "$src" 10.0.0.1 10.0.0.2 1024 9
            done
            ;;
        acl | tse)
            for ((i = 0; i < CLEAN_FLOWS; i++)); do
                udp_frame "$dst" "$src" "10.0.$((i >> 8 & 255)).$((i & 255))" 10.0.0.2 \
                    $((32768 + (i >> 16))) 9
            done
            ;;
    esac >"$file"
}

# The tuple space explosion frames: each fails the ACL's three allow rules (source 10.1.1.1,
# destination port 9, source port 53) at one chosen bit of each field.
write_attack_config() {
    local src dst file=$2 a b c allowed_src=$((10 << 24 | 1 << 16 | 1 << 8 | 1)) ip
    src=$(hex_bytes "$1")
    dst=$(hex_bytes "$SINK_MAC")
    for ((a = 0; a < 32; a++)); do
        ip=$((allowed_src ^ (1 << a)))
        for ((b = 0; b < 16; b++)); do
            for ((c = 0; c < 16; c++)); do
                udp_frame "$dst" "$src" \
                    "$((ip >> 24)).$((ip >> 16 & 255)).$((ip >> 8 & 255)).$((ip & 255))" 10.0.0.2 \
                    $((53 ^ (1 << c))) $((9 ^ (1 << b)))
            done
        done
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
        acl | tse)
            cat >"$file" <<'FLOWS'
priority=100,in_port=2,actions=output:1
priority=40,icmp,actions=output:2
priority=30,udp,nw_src=10.1.1.1,actions=output:2
priority=20,udp,tp_dst=9,actions=output:2
priority=10,udp,tp_src=53,actions=output:2
priority=1,actions=drop
FLOWS
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
    write_trafgen_config "$PROFILE" "$src_mac" "$OUT/trafgen.cfg"

    local idle
    idle=$(ping_percentiles "$src" 10.0.0.2 "$PINGS")

    # trafgen forks a sender; its own process group lets one signal stop both, as Ctrl-C would.
    setsid ip netns exec "$src" taskset -c "$SOURCE_CPU" trafgen --dev eth0 --conf "$OUT/trafgen.cfg" \
        --cpus 1 --no-sock-mem --notouch-irq --no-cpu-stats >"$OUT/trafgen-$switch-$PROFILE.log" 2>&1 &
    local trafgen=$!
    hp_on_exit "kill -INT -- -$trafgen 2>/dev/null; wait $trafgen 2>/dev/null"
    sleep 2 # warm-up: rings filled, flows in the switch's caches
    kill -0 "$trafgen" 2>/dev/null || hp_die "trafgen stopped: $(cat "$OUT/trafgen-$switch-$PROFILE.log")"
    local attacker="" attack_log=$OUT/attack-$switch.log attack_t0 attack_pps=0
    if [[ $PROFILE == tse ]]; then
        write_attack_config "$src_mac" "$OUT/attack.cfg"
        attack_t0=$(date +%s.%N)
        setsid ip netns exec "$src" taskset -c "$SOURCE_CPU" trafgen --dev eth0 --conf "$OUT/attack.cfg" \
            --cpus 1 --rate "${ATTACK_PPS}pps" --no-sock-mem --notouch-irq --no-cpu-stats >"$attack_log" 2>&1 &
        attacker=$!
        hp_on_exit "kill -INT -- -$attacker 2>/dev/null; wait $attacker 2>/dev/null"
        sleep 2 # every attack frame sent at least once: the masks are learnt
    fi
    [[ $switch != ovs ]] || ovs_appctl "$PREFIX" dpif-netdev/pmd-stats-clear >/dev/null

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
    if [[ -n $attacker ]]; then
        kill -INT -- "-$attacker" 2>/dev/null || true
        wait "$attacker" 2>/dev/null || true
        # The attacker's own count over its whole run gives its rate (its sender prints it last).
        hp_wait_for 5 grep -q 'packets outgoing' "$attack_log" || true
        attack_pps=$(awk -v t0="$attack_t0" -v t1="$(date +%s.%N)" \
            '/packets outgoing/ { printf "%.0f", $(NF - 2) / (t1 - t0) }' "$attack_log")
        [[ -n $attack_pps ]] || hp_die "no count from the attack's trafgen: $(cat "$attack_log")"
        hp_log "$switch/$PROFILE: attack at $attack_pps pps"
    fi
    if [[ $switch == ovs ]]; then
        ovs_appctl "$PREFIX" dpctl/dump-flows >"$OUT/megaflows-$PROFILE.txt"
        hp_log "ovs/$PROFILE: $(grep -c "actions:" "$OUT/megaflows-$PROFILE.txt") megaflows, $(
            ovs_appctl "$PREFIX" dpif-netdev/pmd-stats-show |
                sed -n 's/.*avg. subtable lookups per megaflow hit: *\([0-9.]*\).*/\1/p' | head -n 1
        ) subtables searched per megaflow hit"
    fi

    # Attack frames are all dropped: they are taken out of what was offered and received.
    local attack
    attack=$(awk -v pps="$attack_pps" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", pps * (t1 - t0) }')
    awk -v sw="$switch" -v pr="$PROFILE" -v tx=$((tx1 - tx0 - attack)) -v rx=$((rx1 - rx0)) \
        -v swin=$((in1 - in0 - attack)) -v swout=$((out1 - out0)) \
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
awk '$2 == "acl" { clean[$1] = $6 } $2 == "tse" { attacked[$1] = $6 }
    END { for (sw in attacked) if (clean[sw] > 0)
        printf "%s kept %.0f%% of its clean delivered rate under attack\n", sw, 100 * attacked[sw] / clean[sw] }' \
    "$OUT/results.txt" | tee -a "$OUT/results.txt"
hp_log "results in $OUT/results.txt"
