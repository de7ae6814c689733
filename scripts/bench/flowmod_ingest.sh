#!/usr/bin/env bash
# Flow-mod ingest benchmark: 100K distinct flows into one table, side by side in hairpind and
# Open vSwitch 3.1 (userspace netdev bridge, isolated instance in its own namespace).
#
#   1. `ovs-ofctl -O OpenFlow13 add-flows` of the same 100K-line file into each; both times and
#      the ratio OVS / hairpind.
#   2. A raw OpenFlow client over a local TCP connection that pipelines 100K FLOW_MODs and one
#      BARRIER_REQUEST, timed from the first byte sent to the BARRIER_REPLY: flow-mods/s into
#      each switch (target >= 200K/s for hairpind).
# Each switch starts empty for each measurement; the flow count is checked after each.
#
# Usage: sudo scripts/bench/flowmod_ingest.sh [--flows N] [--runs R]
# Env: HAIRPIN_BIN (directory with a release hairpind; default $REPO/target/release).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../lib/common.sh"
source "$HERE/../lib/netns.sh"
source "$HERE/../lib/ovs.sh"

FLOWS=100000
RUNS=3
while (($#)); do
    case $1 in
        --flows) FLOWS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) hp_die "unknown option $1 (expected --flows N or --runs R)" ;;
    esac
done

HAIRPIND=${HAIRPIN_BIN:-$HP_REPO/target/release}/hairpind
PYTHON=$HP_REPO/.venv/bin/python
[[ -x $HAIRPIND ]] || hp_die "no $HAIRPIND: run 'cargo build --release -p hairpind' or set HAIRPIN_BIN"
[[ -x $PYTHON ]] || hp_die "no $PYTHON: run scripts/setup.sh"
hp_require_root
hp_install_cleanup_trap

WORK=$(mktemp -d /tmp/hairpin-bench.XXXXXX)
hp_on_exit "rm -rf '$WORK'"
FLOW_FILE=$WORK/flows.txt

# The same flows for ovs-ofctl and for the raw client: one /32 IPv4 destination each.
"$PYTHON" - "$FLOWS" >"$FLOW_FILE" <<'EOF'
import sys

for i in range(int(sys.argv[1])):
    print(f"table=0,priority=100,ip,nw_dst=10.{i >> 16}.{(i >> 8) & 255}.{i & 255},"
          f"actions=output:{i % 4 + 1}")
EOF

free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# raw_ingest PORT [WRAPPER...]: pipelined raw client (run under WRAPPER, e.g. ip netns exec);
# prints the seconds from the first FLOW_MOD sent to the BARRIER_REPLY.
raw_ingest() {
    "${@:2}" "$PYTHON" - "$1" "$FLOWS" <<'EOF'
import struct
import sys
import time

from hairpin.testing.daemon import (
    OFPT_BARRIER_REPLY, OFPT_BARRIER_REQUEST, OFPT_ERROR, OFPT_FLOW_MOD, OfClient,
    action_output, flow_mod_body, instruction_apply, match, message, oxm,
)

port, count = int(sys.argv[1]), int(sys.argv[2])
eth_ip = oxm(5, struct.pack("!H", 0x0800))
batch = b"".join(
    message(
        OFPT_FLOW_MOD,
        flow_mod_body(
            priority=100,
            match_bytes=match(eth_ip, oxm(12, bytes([10, i >> 16, (i >> 8) & 255, i & 255]))),
            instructions=[instruction_apply(action_output(i % 4 + 1))],
        ),
        i + 1,
    )
    for i in range(count)
) + message(OFPT_BARRIER_REQUEST, b"", 0xFFFFFFF0)
with OfClient(port, timeout=300) as client:
    client.handshake()
    started = time.perf_counter()
    client.send_raw(batch)
    while True:
        reply = client.recv()
        assert reply.msg_type != OFPT_ERROR, f"switch refused a flow-mod: {reply}"
        if reply.msg_type == OFPT_BARRIER_REPLY:
            break
    elapsed = time.perf_counter() - started
    assert client.flow_count() == count, "flow count after the barrier"
print(f"{elapsed:.3f}")
EOF
}

# timed CMD...: run CMD, print its wall time in seconds.
timed() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" 'BEGIN {printf "%.3f\n", e - s}'
}

flow_count() { "$@" dump-aggregate | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p'; }

HP_PORT=$(free_port)
start_hairpind() {
    "$HAIRPIND" --datapath-id 0x1 --listen "ptcp:$HP_PORT:127.0.0.1" >"$WORK/hairpind.log" 2>&1 &
    HP_PID=$!
    hp_on_exit "kill $HP_PID 2>/dev/null"
    hp_wait_for 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$HP_PORT" || hp_die "hairpind did not start"
}
stop_hairpind() { kill -TERM "$HP_PID"; wait "$HP_PID" 2>/dev/null || true; }
hp_ofctl() { ovs-ofctl -O OpenFlow13 "$1" "tcp:127.0.0.1:$HP_PORT" "${@:2}"; }

PREFIX=$(hp_unique_prefix)
OVS_PORT=$(free_port)
netns_create "$PREFIX"
ovs_start "$PREFIX" "$PREFIX"
ovs_add_bridge "$PREFIX" br0 1
ovs_set_controller "$PREFIX" br0 "ptcp:$OVS_PORT:127.0.0.1"
hp_wait_for 20 ovs_ofctl "$PREFIX" show "tcp:127.0.0.1:$OVS_PORT" || hp_die "OVS did not listen"
ovs_cmd() { ovs_ofctl "$PREFIX" "$1" "tcp:127.0.0.1:$OVS_PORT" "${@:2}"; }
OVS_VERSION=$(ovs_exec "$PREFIX" ovs-vswitchd --version | head -1)

declare -a HP_OFCTL OVS_OFCTL HP_RAW OVS_RAW
for ((run = 1; run <= RUNS; run++)); do
    hp_log "run $run/$RUNS: ovs-ofctl add-flows of $FLOWS flows"
    start_hairpind
    HP_OFCTL+=("$(timed hp_ofctl add-flows "$FLOW_FILE")")
    [[ $(flow_count hp_ofctl) == "$FLOWS" ]] || hp_die "hairpind holds $(flow_count hp_ofctl) flows"
    stop_hairpind
    ovs_cmd del-flows
    OVS_OFCTL+=("$(timed ovs_cmd add-flows "$FLOW_FILE")")
    [[ $(flow_count ovs_cmd) == "$FLOWS" ]] || hp_die "OVS holds $(flow_count ovs_cmd) flows"
    ovs_cmd del-flows

    hp_log "run $run/$RUNS: raw pipelined client, $FLOWS flow-mods + barrier"
    start_hairpind
    HP_RAW+=("$(raw_ingest "$HP_PORT")")
    stop_hairpind
    OVS_RAW+=("$(raw_ingest "$OVS_PORT" ip netns exec "$PREFIX")")
    ovs_cmd del-flows
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
rate() { awk -v n="$FLOWS" -v s="$1" 'BEGIN {printf "%.0f", n / s}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

hp_ofctl_s=$(median "${HP_OFCTL[@]}")
ovs_ofctl_s=$(median "${OVS_OFCTL[@]}")
hp_raw_s=$(median "${HP_RAW[@]}")
ovs_raw_s=$(median "${OVS_RAW[@]}")
cat <<EOF
flow-mod ingest, $FLOWS flows into an empty table, median of $RUNS runs
hairpind: $("$HAIRPIND" --version)   peer: $OVS_VERSION (netdev)   $(nproc) cores, $(uname -r)
                              hairpind        Open vSwitch    OVS/hairpind
ovs-ofctl add-flows (s)       $(printf '%-15s %-15s %s' "$hp_ofctl_s" "$ovs_ofctl_s" "$(ratio "$ovs_ofctl_s" "$hp_ofctl_s")")
raw TCP pipelined (s)         $(printf '%-15s %-15s %s' "$hp_raw_s" "$ovs_raw_s" "$(ratio "$ovs_raw_s" "$hp_raw_s")")
raw TCP flow-mods/s           $(printf '%-15s %-15s' "$(rate "$hp_raw_s")" "$(rate "$ovs_raw_s")")
all runs (s): hairpind ofctl ${HP_OFCTL[*]}; ovs ofctl ${OVS_OFCTL[*]}; hairpind raw ${HP_RAW[*]}; ovs raw ${OVS_RAW[*]}
EOF
