#!/usr/bin/env bash
# Reactive control, Hairpin and Open vSwitch 3.1 (netdev) side by side (docs/bench/reactive.md).
#
# Each run builds a fresh topology per switch: hosts h1..h4 in namespaces cabled to ports 1..4
# of the switch in its own namespace, and measures, with `ofbench` as the controller (it
# listens on the switch namespace's loopback, the switch connects to it):
#   roundtrip idle     h1 sends UDP requests the controller answers by PACKET_OUT (one every
#                      --interval us): round trip, PACKET_IN alone, PACKET_OUT alone
#   roundtrip loaded   the same while trafgen (on CPU 0) floods h3 -> port 3 -> port 4 -> h4
#   flowsetup 1 / W    h1 opens new UDP flows to h2; the controller answers each PACKET_IN with
#                      FLOW_MOD + PACKET_OUT; 1 and W first packets in flight
#   add-flows          `ovs-ofctl add-flows` of --flows flows (it awaits a barrier reply after
#                      each flow-mod), into an empty table; the flow count is checked
# Switches alternate within a run; the summary is the median over runs (range in brackets).
# Switches: hairpind, ovs, and hairpind_busy (hairpind --busy-poll: datapath threads that never
# sleep, a core each, as Open vSwitch's PMD threads poll with DPDK).
# Both switches run at nice --nice (default -10, the priority Debian's ovs-ctl gives
# ovs-vswitchd); the controller and hosts run under SCHED_FIFO (ofbench --realtime).
# --controller-cpu C pins the round trips' controller to CPU C, puts hairpind_busy's polling
# thread there too (a controller on the switch's own core, as a local controllet runs) and
# moves the load generator to another CPU.
#
# Usage: sudo scripts/bench/reactive.sh [--runs R] [--requests N] [--interval US]
#            [--seconds S] [--window W] [--flows N] [--parts roundtrip,flowsetup,addflows]
#            [--switches hairpind,ovs] [--nice N] [--controller-cpu C] [--out DIR]
# Env: HAIRPIN_BIN (directory with release hairpind and ofbench; default $REPO/target/release).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=SCRIPTDIR/../lib/netns.sh
source "$HERE/../lib/netns.sh"
# shellcheck source=SCRIPTDIR/../lib/ovs.sh
source "$HERE/../lib/ovs.sh"

RUNS=3
REQUESTS=1000
INTERVAL_US=2000
SECONDS_SETUP=5
WINDOW=64
FLOWS=100000
PARTS=roundtrip,flowsetup,addflows
SWITCHES=hairpind,ovs
OUT=${TMPDIR:-/tmp}/hairpin-reactive
NICE=-10
CONTROLLER_PORT=16850
OFCTL_PORT=16851
LOAD_CPU=0
CONTROLLER_CPU=
BIN=${HAIRPIN_BIN:-$HP_REPO/target/release}

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit "${1:-0}"
}

while (($#)); do
    case $1 in
        --runs) RUNS=$2; shift 2 ;;
        --requests) REQUESTS=$2; shift 2 ;;
        --interval) INTERVAL_US=$2; shift 2 ;;
        --seconds) SECONDS_SETUP=$2; shift 2 ;;
        --window) WINDOW=$2; shift 2 ;;
        --flows) FLOWS=$2; shift 2 ;;
        --parts) PARTS=$2; shift 2 ;;
        --switches) SWITCHES=$2; shift 2 ;;
        --nice) NICE=$2; shift 2 ;;
        --controller-cpu) CONTROLLER_CPU=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h | --help) usage ;;
        *) usage 2 >&2 ;;
    esac
done

# other_cpu C: a CPU this script may run on, other than C.
other_cpu() {
    local part c
    for part in $(taskset -cp $$ | sed 's/.*: //; s/,/ /g'); do
        for ((c = ${part%-*}; c <= ${part#*-}; c++)); do
            ((c == $1)) || { echo "$c"; return; }
        done
    done
}

ROUNDTRIP_ARGS=()
BUSY_ARGS=()
if [[ -n $CONTROLLER_CPU ]]; then
    ROUNDTRIP_ARGS=(--controller-cpu "$CONTROLLER_CPU")
    BUSY_ARGS=(--datapath-cpus "$CONTROLLER_CPU")
    LOAD_CPU=$(other_cpu "$CONTROLLER_CPU")
    [[ -n $LOAD_CPU ]] || hp_die "--controller-cpu needs another CPU for the load"
fi

for tool in hairpind ofbench; do
    [[ -x $BIN/$tool ]] || hp_die "no $BIN/$tool: cargo build --release -p hairpind -p ofbench"
done
hp_require_root
hp_install_cleanup_trap
mkdir -p "$OUT"
RESULTS=$OUT/results.txt
: >"$RESULTS"
has_part() { [[ ,$PARTS, == *,$1,* ]]; }

SERVICE_MAC=02:00:00:00:00:fe

mac_of() { ip -n "$1" -o link show "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }

# topology: namespaces $PREFIX-sw and $PREFIX-h1..h4 (10.0.0.1-4/24), hI on switch port pI.
topology() {
    PREFIX=$(hp_unique_prefix)
    SW_NS=$PREFIX-sw
    netns_create "$SW_NS"
    netns_hosts "$PREFIX" "$SW_NS" 4
    ip -n "$PREFIX-h1" neigh replace 10.0.0.254 lladdr "$SERVICE_MAC" dev eth0 nud permanent
    # h2 receives the flow-setup flows from sources across its /24.
    ip netns exec "$PREFIX-h2" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.eth0.rp_filter=0
}

# start_hairpind [ARGS...]: hairpind with the topology's ports and both OpenFlow channels.
start_hairpind() {
    ip netns exec "$SW_NS" nice -n "$NICE" "$BIN/hairpind" "$@" --datapath-id 1 \
        --controller "tcp:127.0.0.1:$CONTROLLER_PORT" --listen "ptcp:$OFCTL_PORT:127.0.0.1" \
        --control-socket "$OUT/hairpind.ctl" \
        --port 1=p1 --port 2=p2 --port 3=p3 --port 4=p4 --fail-mode secure \
        >>"$OUT/hairpind.log" 2>&1 &
    SWITCH_PID=$!
    hp_on_exit "kill $SWITCH_PID 2>/dev/null; wait $SWITCH_PID 2>/dev/null"
}

start_hairpind_busy() { start_hairpind --busy-poll "${BUSY_ARGS[@]}"; }

start_ovs() {
    ovs_start "$PREFIX" "$SW_NS"
    ovs_add_bridge "$PREFIX" br0 1 p1 p2 p3 p4
    ovs_set_controller "$PREFIX" br0 "tcp:127.0.0.1:$CONTROLLER_PORT" "ptcp:$OFCTL_PORT:127.0.0.1"
    # Reconnect within a second when the next measurement's controller comes up.
    local id
    for id in $(ovs_vsctl "$PREFIX" --bare --columns=_uuid list controller); do
        ovs_vsctl "$PREFIX" set controller "$id" max_backoff=1000
    done
    SWITCH_PID=$(ovs_pid "$PREFIX")
    local task
    for task in "/proc/$SWITCH_PID/task/"*; do
        renice -n "$NICE" -p "${task##*/}" >/dev/null
    done
}

stop_switch() {
    case $SWITCH in
        hairpind | hairpind_busy) kill "$SWITCH_PID" 2>/dev/null; wait "$SWITCH_PID" 2>/dev/null || true ;;
        ovs) ovs_stop "$PREFIX" ;;
    esac
}

ofctl() { ip netns exec "$SW_NS" ovs-ofctl -O OpenFlow13 "$1" "tcp:127.0.0.1:$OFCTL_PORT" "${@:2}"; }

# ofbench MODE ARGS...: runs one measurement; its result line goes to $RESULTS.
ofbench() {
    local log=$OUT/ofbench-$SWITCH-$1.log
    "$BIN/ofbench" --realtime "$1" --switch-ns "$SW_NS" --listen "127.0.0.1:$CONTROLLER_PORT" \
        --label "$SWITCH" "${@:2}" >"$log" 2>&1 || { cat "$log" >&2; hp_die "ofbench $1 failed"; }
    grep -v '^result' "$log" >&2
    sed -n "s/^result /run=$RUN part=$PART switch=$SWITCH /p" "$log" >>"$RESULTS"
}

# load_start / load_stop: trafgen on CPU $LOAD_CPU floods 60-byte UDP frames h3 -> h4.
load_start() {
    local dst_mac src_mac
    dst_mac=$(mac_of "$PREFIX-h4" eth0 | sed 's/^/0x/; s/:/, 0x/g')
    src_mac=$(mac_of "$PREFIX-h3" eth0 | sed 's/^/0x/; s/:/, 0x/g')
    # IPv4 10.0.0.3 -> 10.0.0.4 UDP 1024 -> 9, header checksum 0x26c0.
    # trafgen binds its process i to CPU i: LOAD_CPU + 1 processes, the packet declared for
    # the last one's CPU alone.
    printf 'cpu(%s): { %s, %s, 0x08, 0x00, 0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xc0, 10, 0, 0, 3, 10, 0, 0, 4, 0x04, 0x00, 0x00, 0x09, 0x00, 0x1a, 0x00, 0x00, fill(0x00, 18) }\n' \
        "$LOAD_CPU" "$dst_mac" "$src_mac" >"$OUT/trafgen.cfg"
    setsid ip netns exec "$PREFIX-h3" trafgen --dev eth0 \
        --conf "$OUT/trafgen.cfg" --cpus $((LOAD_CPU + 1)) --no-sock-mem --notouch-irq --no-cpu-stats \
        >"$OUT/trafgen.log" 2>&1 &
    LOAD_PID=$!
    hp_on_exit "kill -INT -- -$LOAD_PID 2>/dev/null; wait $LOAD_PID 2>/dev/null"
    LOAD_T0=$(date +%s.%N)
    LOAD_TX0=$(ip netns exec "$PREFIX-h3" cat /sys/class/net/eth0/statistics/tx_packets)
    LOAD_RX0=$(ip netns exec "$PREFIX-h4" cat /sys/class/net/eth0/statistics/rx_packets)
}
load_stop() {
    local tx rx t
    tx=$(ip netns exec "$PREFIX-h3" cat /sys/class/net/eth0/statistics/tx_packets)
    rx=$(ip netns exec "$PREFIX-h4" cat /sys/class/net/eth0/statistics/rx_packets)
    t=$(date +%s.%N)
    kill -INT -- "-$LOAD_PID" 2>/dev/null || true
    wait "$LOAD_PID" 2>/dev/null || true
    awk -v tx=$((tx - LOAD_TX0)) -v rx=$((rx - LOAD_RX0)) -v dt="$(awk -v a="$LOAD_T0" -v b="$t" 'BEGIN { print b - a }')" \
        -v run="$RUN" -v sw="$SWITCH" 'BEGIN {
            printf "run=%s part=load switch=%s offered_pps=%.0f delivered_pps=%.0f\n", run, sw, tx / dt, rx / dt }' |
        tee -a "$RESULTS" >&2
}

# in_background CMD...: CMD in a background subshell with a cleanup stack of its own (the
# parent's entries stay with the parent).
in_background() {
    HP_CLEANUP=()
    hp_install_cleanup_trap
    "$@"
}

measure_roundtrip() {
    PART=roundtrip-idle
    ofbench roundtrip --host-ns "$PREFIX-h1" --requests "$REQUESTS" --interval-us "$INTERVAL_US" \
        "${ROUNDTRIP_ARGS[@]}"
    PART=roundtrip-loaded
    load_start
    ofbench roundtrip --host-ns "$PREFIX-h1" --requests "$REQUESTS" --interval-us "$INTERVAL_US" \
        --forward 3,4 --settle-ms 2000 "${ROUNDTRIP_ARGS[@]}"
    load_stop
}

measure_flowsetup() {
    local window
    for window in 1 "$WINDOW"; do
        PART=flowsetup-$window
        ofbench flowsetup --sender-ns "$PREFIX-h1" --sender-mac "$(mac_of "$PREFIX-h1" eth0)" \
            --receiver-ns "$PREFIX-h2" --receiver-mac "$(mac_of "$PREFIX-h2" eth0)" \
            --window "$window" --seconds "$SECONDS_SETUP"
    done
}

measure_addflows() {
    PART=addflows
    local start end count
    ofctl del-flows
    start=$(date +%s.%N)
    ofctl add-flows "$FLOW_FILE"
    end=$(date +%s.%N)
    count=$(ofctl dump-aggregate | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
    [[ $count == "$FLOWS" ]] || hp_die "$SWITCH holds $count flows after add-flows of $FLOWS"
    awk -v s="$start" -v e="$end" -v run="$RUN" -v sw="$SWITCH" -v n="$FLOWS" 'BEGIN {
        printf "run=%s part=addflows switch=%s flows=%d seconds=%.3f\n", run, sw, n, e - s }' |
        tee -a "$RESULTS" >&2
    ofctl del-flows
}

FLOW_FILE=$OUT/flows.txt
awk -v n="$FLOWS" 'BEGIN { for (i = 0; i < n; i++)
    printf "table=0,priority=100,ip,nw_dst=10.%d.%d.%d,actions=output:%d\n",
        int(i / 65536), int(i / 256) % 256, i % 256, i % 4 + 1 }' >"$FLOW_FILE"

hp_log "load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $("$BIN/hairpind" --version); $(ovs-vswitchd --version | head -1)"
for ((RUN = 1; RUN <= RUNS; RUN++)); do
    for SWITCH in ${SWITCHES//,/ }; do
        hp_log "run $RUN/$RUNS: $SWITCH (load average $(cut -d' ' -f1 /proc/loadavg))"
        topology
        # The controller listens before the switch starts, so no reconnect backoff delays it.
        for part in roundtrip flowsetup; do
            has_part "$part" || continue
            in_background "measure_$part" &
            MEASURE_PID=$!
            if [[ -z ${SWITCH_PID:-} ]] || ! kill -0 "$SWITCH_PID" 2>/dev/null; then
                sleep 0.2
                "start_$SWITCH"
            fi
            wait "$MEASURE_PID" || hp_die "$part on $SWITCH failed"
        done
        if has_part addflows; then
            if [[ -z ${SWITCH_PID:-} ]] || ! kill -0 "$SWITCH_PID" 2>/dev/null; then
                "start_$SWITCH"
            fi
            hp_wait_for 20 ofctl show || hp_die "$SWITCH: no OpenFlow listener"
            measure_addflows
        fi
        stop_switch
        SWITCH_PID=
    done
done

# Medians over runs of each figure, with the range over runs.
summary() {
    awk '
        { key = ""; for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
          id = f["part"] SUBSEP f["switch"]
          if (!(id in seen)) { seen[id] = 1; order[++n] = id }
          for (i = 1; i <= NF; i++) { split($i, kv, "=")
              if (kv[1] ~ /^(run|part|switch|label)$/) continue
              k = id SUBSEP kv[1]
              if (!(k in cnt)) names[id] = names[id] " " kv[1]
              vals[k, ++cnt[k]] = kv[2] } }
        function median(k, m, i, j, t, a) {
            m = cnt[k]; for (i = 1; i <= m; i++) a[i] = vals[k, i]
            for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            lo = a[1]; hi = a[m]; return a[int((m + 1) / 2)] }
        END { for (r = 1; r <= n; r++) { id = order[r]; split(id, p, SUBSEP)
                line = sprintf("%-17s %-9s", p[1], p[2]); c = split(names[id], nm, " ")
                for (i = 1; i <= c; i++) { k = id SUBSEP nm[i]; v = median(k)
                    line = line sprintf(" %s=%s", nm[i], v) (lo != hi ? sprintf("[%s-%s]", lo, hi) : "") }
                print line } }' "$RESULTS"
}
printf '\nmedian over %s runs [range]; times in us (p50/p99/max), rates per second\n' "$RUNS"
summary
printf 'all results: %s\n' "$RESULTS"
