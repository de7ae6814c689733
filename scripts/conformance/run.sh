#!/usr/bin/env bash
# Runs the os-ken switch test tool (os_ken/tests/switch/tester.py, OpenFlow 1.3 sets) against a
# target switch, with an Open vSwitch netdev bridge as the tester switch, and prints the pass
# count of each set.
#
# Topology (each set gets a fresh one):
#   namespace <prefix>-ctl: osken-manager (the tester app) on 0.0.0.0:PORT, and the target switch
#       with OpenFlow ports 1,2,3 = t1,t2,t3, connecting to tcp:127.0.0.1:PORT
#   namespace <prefix>-tst: OVS tester bridge with ports 1,2,3 = s1,s2,s3 (cabled to t1,t2,t3),
#       connecting to tcp:10.254.0.1:PORT over a control cable (c0 <-> c0)
#
# Target harmless (seed 000): the tester's cables end on access ports ge1,ge2,ge3 of a legacy
# switch (a standalone Open vSwitch in namespace <prefix>-leg, VLANs 101-103, QinQ tunnel so
# tagged frames cross), whose trunk up0 goes to interface tr0 of hairpind in <prefix>-ctl, where
# the three VLANs are OpenFlow ports 1,2,3.
#
# Usage: scripts/conformance/run.sh [--target ovs|hairpind|harmless] [--sets match,action,...]
#            [--target-dpid HEX] [--tester-dpid HEX] [--port N] [--out DIR] [--only GLOB]
# --only GLOB[,GLOB...] runs only the cases whose file name matches one of the shell patterns
# (e.g. '*DSCP*').
# A new target is a function start_target_NAME that starts the switch in namespace $CTL_NS with
# ports t1 t2 t3 as 1 2 3 and datapath id $TARGET_DPID, connecting to tcp:127.0.0.1:$OF_PORT;
# a target cabled otherwise also has cable_target_NAME TESTER_NS (the default cables t1..t3 in
# $CTL_NS to s1..s3 in the tester's namespace).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib/common.sh
source "$HERE/../lib/common.sh"
# shellcheck source=SCRIPTDIR/../lib/netns.sh
source "$HERE/../lib/netns.sh"
# shellcheck source=SCRIPTDIR/../lib/ovs.sh
source "$HERE/../lib/ovs.sh"

TARGET=ovs
SETS=match,action,group,meter
TARGET_DPID=0000000000000001
TESTER_DPID=0000000000000002
OF_PORT=16690
OUT=${TMPDIR:-/tmp}/hairpin-conformance
ONLY=
VENV=${HAIRPIN_VENV:-$HP_REPO/.venv}
HAIRPIND=${HAIRPIND:-$HP_REPO/target/release/hairpind}

# Prints this file's header comment.
usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit "${1:-0}"
}

while (($#)); do
    case $1 in
        --target) TARGET=$2; shift 2 ;;
        --sets) SETS=$2; shift 2 ;;
        --target-dpid) TARGET_DPID=$2; shift 2 ;;
        --tester-dpid) TESTER_DPID=$2; shift 2 ;;
        --port) OF_PORT=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --only) ONLY=$2; shift 2 ;;
        -h | --help) usage ;;
        *) usage 2 >&2 ;;
    esac
done

start_target_ovs() {
    ovs_start "$PREFIX-target" "$CTL_NS"
    ovs_add_bridge "$PREFIX-target" br0 "0x$TARGET_DPID" t1 t2 t3
    ovs_set_controller "$PREFIX-target" br0 "tcp:127.0.0.1:$OF_PORT"
}

start_target_hairpind() {
    [[ -x $HAIRPIND ]] || hp_die "no hairpind at $HAIRPIND (cargo build --release, or set HAIRPIND)"
    ip netns exec "$CTL_NS" "$HAIRPIND" --datapath-id "0x$TARGET_DPID" \
        --controller "tcp:127.0.0.1:$OF_PORT" --listen "punix:$OUT/$SET-hairpind.sock" \
        --port 1=t1 --port 2=t2 --port 3=t3 >"$OUT/$SET-hairpind.log" 2>&1 &
    hp_on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
}

# The legacy switch in front of hairpind: access ports ge1..ge3 (VLANs 101..103, tunnelling the
# tester's own tags) to the tester's s1..s3, and the trunk up0 to tr0 in $CTL_NS. The trunk's
# MTU leaves room for the outer tag over a tagged full-size frame.
cable_target_harmless() {
    local tst_ns=$1 legacy_ns=$PREFIX-leg i
    local args=(-- set Open_vSwitch . other_config:vlan-limit=0
        -- add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=standalone
        other-config:forward-bpdu=true)
    netns_create "$legacy_ns"
    for i in 1 2 3; do
        netns_link "$legacy_ns" "ge$i" "$tst_ns" "s$i"
        args+=(-- add-port br0 "ge$i" -- set port "ge$i" "tag=$((100 + i))"
            vlan_mode=dot1q-tunnel other_config:qinq-ethtype=802.1q)
    done
    netns_link "$legacy_ns" up0 "$CTL_NS" tr0
    ip -n "$legacy_ns" link set up0 mtu 1504
    ip -n "$CTL_NS" link set tr0 mtu 1504
    args+=(-- add-port br0 up0 -- set port up0 "trunks=101,102,103" vlan_mode=trunk)
    ovs_start "$PREFIX-legacy" "$legacy_ns"
    ovs_vsctl "$PREFIX-legacy" "${args[@]}"
    ip -n "$legacy_ns" link set br0 up
}

start_target_harmless() {
    [[ -x $HAIRPIND ]] || hp_die "no hairpind at $HAIRPIND (cargo build --release, or set HAIRPIND)"
    ip netns exec "$CTL_NS" "$HAIRPIND" --datapath-id "0x$TARGET_DPID" \
        --controller "tcp:127.0.0.1:$OF_PORT" --listen "punix:$OUT/$SET-hairpind.sock" \
        --control-socket "$OUT/$SET-hairpind.ctl" --trunk legacy=tr0 \
        --port 1=legacy:101:ge1 --port 2=legacy:102:ge2 --port 3=legacy:103:ge3 \
        >"$OUT/$SET-hairpind.log" 2>&1 &
    hp_on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
}

# run_set SET: one set on a fresh topology; prints "SET: passed/total (seconds)".
run_set() {
    SET=$1
    hp_install_cleanup_trap # this runs in a pipeline's subshell, which does not inherit traps
    PREFIX=$(hp_unique_prefix)
    CTL_NS=$PREFIX-ctl
    local tst_ns=$PREFIX-tst log=$OUT/$SET.log start=$SECONDS
    local dir
    dir=$("$VENV/bin/python" -c 'import os_ken.tests.switch as t, os; print(os.path.dirname(t.__file__))')/of13/$SET
    [[ -d $dir ]] || hp_die "no test set $dir"
    if [[ -n $ONLY ]]; then
        local subset=$OUT/$SET-cases
        rm -rf "$subset"
        mkdir -p "$subset"
        local pattern patterns
        IFS=, read -ra patterns <<<"$ONLY"
        for pattern in "${patterns[@]}"; do
            find "$dir" -name "$pattern" -exec cp {} "$subset/" \;
        done
        [[ -n $(ls -A "$subset") ]] || hp_die "no case of $SET matches $ONLY"
        dir=$subset
    fi

    netns_create "$CTL_NS"
    netns_create "$tst_ns"
    if declare -F "cable_target_$TARGET" >/dev/null; then
        "cable_target_$TARGET" "$tst_ns"
    else
        netns_link "$CTL_NS" t1 "$tst_ns" s1
        netns_link "$CTL_NS" t2 "$tst_ns" s2
        netns_link "$CTL_NS" t3 "$tst_ns" s3
    fi
    netns_link "$CTL_NS" c0 "$tst_ns" c0
    ip -n "$CTL_NS" addr add 10.254.0.1/30 dev c0
    ip -n "$tst_ns" addr add 10.254.0.2/30 dev c0

    ovs_start "$PREFIX-tester" "$tst_ns"
    # The tool deletes and re-adds the tester's flow before every case; with datapath flows
    # cached, Open vSwitch's revalidator can install the in-between "drop" and fix it only
    # milliseconds after the tool sends its packet, so the tester drops it. With no datapath
    # flows every packet is translated against the tables as they are after the barrier.
    ovs_vsctl "$PREFIX-tester" set Open_vSwitch . other_config:flow-limit=0
    ovs_add_bridge "$PREFIX-tester" br0 "0x$TESTER_DPID" s1 s2 s3
    "start_target_$TARGET"
    ovs_set_controller "$PREFIX-tester" br0 "tcp:10.254.0.1:$OF_PORT"

    hp_log "$SET: running (log: $log)"
    # The tester ends itself with SIGTERM; waiting on a background job keeps bash from
    # announcing that.
    ip netns exec "$CTL_NS" "$VENV/bin/osken-manager" --ofp-tcp-listen-port "$OF_PORT" \
        --test-switch-target "$TARGET_DPID" --test-switch-tester "$TESTER_DPID" \
        --test-switch-dir "$dir" os_ken.tests.switch.tester >"$log" 2>&1 &
    wait $! || true
    hp_run_cleanup
    hp_install_cleanup_trap

    local passed failed
    passed=$(sed -n 's/^OK(\([0-9]*\)) \/ ERROR(\([0-9]*\))$/\1/p' "$log")
    failed=$(sed -n 's/^OK(\([0-9]*\)) \/ ERROR(\([0-9]*\))$/\2/p' "$log")
    if [[ -z $passed ]]; then
        printf '%s: no report (tester stopped early, see %s) (%ds)\n' "$SET" "$log" $((SECONDS - start))
    else
        printf '%s: %d/%d passed (%ds)\n' "$SET" "$passed" $((passed + failed)) $((SECONDS - start))
    fi
}

hp_require_root
[[ -x $VENV/bin/osken-manager ]] || hp_die "no osken-manager in $VENV: run scripts/setup.sh"
declare -F "start_target_$TARGET" >/dev/null || hp_die "unknown target $TARGET"
mkdir -p "$OUT"
hp_install_cleanup_trap
IFS=, read -ra set_list <<<"$SETS"
for set_name in "${set_list[@]}"; do
    run_set "$set_name" | tee -a "$OUT/summary.txt"
done
