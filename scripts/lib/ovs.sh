# shellcheck shell=bash
# Isolated Open vSwitch instances (userspace netdev datapath), one per network namespace.
# Each instance has its own database, run, log and config directories, so it never touches
# the system's Open vSwitch. Source after common.sh. Instances stop on exit (hp_on_exit).

HP_OVS_BASE=${HP_OVS_BASE:-/tmp/hairpin-ovs}
HP_OVS_PROTOCOLS=${HP_OVS_PROTOCOLS:-OpenFlow13}
HP_OVS_SCHEMA=${HP_OVS_SCHEMA:-/usr/share/openvswitch/vswitch.ovsschema}

_ovs_dir() { printf '%s/%s\n' "$HP_OVS_BASE" "$1"; }

# ovs_exec NAME CMD...: run CMD in instance NAME's namespace with NAME's OVS_* directories.
ovs_exec() {
    local dir
    dir=$(_ovs_dir "$1")
    [[ -f $dir/netns ]] || hp_die "no OVS instance named $1"
    ip netns exec "$(<"$dir/netns")" env \
        OVS_RUNDIR="$dir" OVS_DBDIR="$dir" OVS_LOGDIR="$dir" OVS_SYSCONFDIR="$dir" \
        OVS_PKGDATADIR=/usr/share/openvswitch "${@:2}"
}

# ovs_vsctl NAME ARGS... / ovs_ofctl NAME ARGS... / ovs_appctl NAME ARGS...
ovs_vsctl() { ovs_exec "$1" ovs-vsctl --timeout=10 "${@:2}"; }
ovs_ofctl() { ovs_exec "$1" ovs-ofctl -O OpenFlow13 "${@:2}"; }
ovs_appctl() { ovs_exec "$1" ovs-appctl "${@:2}"; }

# ovs_start NAME NS: start ovsdb-server and ovs-vswitchd for instance NAME inside namespace NS.
ovs_start() {
    local name=$1 ns=$2 dir
    dir=$(_ovs_dir "$name")
    [[ ! -e $dir ]] || hp_die "OVS instance directory $dir already exists"
    mkdir -p "$dir"
    printf '%s\n' "$ns" >"$dir/netns"
    hp_on_exit "ovs_stop '$name'"
    ovs_exec "$name" ovsdb-tool create "$dir/conf.db" "$HP_OVS_SCHEMA"
    ovs_exec "$name" ovsdb-server "$dir/conf.db" --remote="punix:$dir/db.sock" \
        -vconsole:off --pidfile --detach --no-chdir --log-file
    ovs_vsctl "$name" --no-wait init
    ovs_exec "$name" ovs-vswitchd "unix:$dir/db.sock" -vconsole:off --pidfile --detach --no-chdir --log-file
    hp_wait_for 10 ovs_appctl "$name" version || hp_die "ovs-vswitchd $name did not start"
}

# ovs_pid NAME: the ovs-vswitchd process id of instance NAME.
ovs_pid() { cat "$(_ovs_dir "$1")/ovs-vswitchd.pid"; }

# ovs_add_bridge NAME BRIDGE DPID IFACE...: a netdev bridge whose OpenFlow port i is the
# i-th IFACE. Fail mode secure, in-band control off, protocols $HP_OVS_PROTOCOLS.
ovs_add_bridge() {
    local name=$1 bridge=$2 dpid=$3 port=0 iface
    local args=(-- add-br "$bridge" -- set bridge "$bridge" datapath_type=netdev
        "protocols=$HP_OVS_PROTOCOLS" fail-mode=secure
        "other-config:datapath-id=$(printf '%016x' "$dpid")"
        other-config:disable-in-band=true)
    for iface in "${@:4}"; do
        port=$((port + 1))
        args+=(-- add-port "$bridge" "$iface" -- set interface "$iface" "ofport_request=$port")
    done
    ovs_vsctl "$name" "${args[@]}"
    ovs_exec "$name" ip link set "$bridge" up
}

# ovs_set_controller NAME BRIDGE TARGET...: e.g. tcp:127.0.0.1:16653 or ptcp:16654:127.0.0.1.
ovs_set_controller() { ovs_vsctl "$1" set-controller "$2" "${@:3}"; }

# ovs_set_fail_mode NAME BRIDGE secure|standalone
ovs_set_fail_mode() { ovs_vsctl "$1" set-fail-mode "$2" "$3"; }

# ovs_wait_connected NAME BRIDGE [SECONDS]: wait until the bridge's controller is connected.
ovs_wait_connected() {
    hp_wait_for "${3:-20}" _ovs_is_connected "$1" "$2"
}
_ovs_is_connected() { ovs_vsctl "$1" --columns=is_connected list controller | grep -q true; }

# ovs_stop NAME: stop both daemons and remove the instance's directory.
ovs_stop() {
    local dir pidfile pid
    dir=$(_ovs_dir "$1")
    [[ -d $dir ]] || return 0
    for pidfile in "$dir/ovs-vswitchd.pid" "$dir/ovsdb-server.pid"; do
        [[ -f $pidfile ]] || continue
        pid=$(<"$pidfile")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
}
