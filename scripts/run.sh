#!/usr/bin/env bash
# The embedded default: four hosts in network namespaces, cabled by veth pairs to Hairpin in a
# switch namespace, under the bundled os-ken learning-switch app (or, with --standalone, with no
# controller at all). Pings every pair, shows the flows the controller installed, tells how to
# attach your own controller, and cleans everything up on exit.
#
#   sudo scripts/run.sh                 # run, then wait for Ctrl-C
#   sudo scripts/run.sh --once          # run the checks and exit (used by the tests)
#   sudo scripts/run.sh --standalone    # no controller: Hairpin acts as a learning switch
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$REPO/scripts/lib/common.sh"
source "$REPO/scripts/lib/netns.sh"

ONCE=0
STANDALONE=0
for arg in "$@"; do
    case $arg in
        --once) ONCE=1 ;;
        --standalone) STANDALONE=1 ;;
        *) hp_die "unknown option $arg (expected --once or --standalone)" ;;
    esac
done

hp_require_root
hp_install_cleanup_trap
"$REPO/scripts/setup.sh"
hp_log "building hairpind (release)"
cargo build --release --quiet -p hairpind --manifest-path "$REPO/Cargo.toml"

PREFIX=$(hp_unique_prefix)
SW="$PREFIX-sw"
OF_PORT=16653
CTL_PORT=16633
HOSTS=4
netns_create "$SW"
netns_hosts "$PREFIX" "$SW" "$HOSTS" 10.0.0

PORT_FLAGS=()
for ((i = 1; i <= HOSTS; i++)); do PORT_FLAGS+=(--port "$i=p$i"); done
LOGDIR=$(mktemp -d)
hp_on_exit "rm -rf '$LOGDIR'"

if ((STANDALONE)); then
    MODE_FLAGS=(--fail-mode standalone)
else
    hp_log "starting the os-ken learning-switch app on 127.0.0.1:$CTL_PORT"
    ip netns exec "$SW" "$REPO/.venv/bin/osken-manager" --ofp-tcp-listen-port "$CTL_PORT" \
        --ofp-listen-host 127.0.0.1 hairpin.apps.learning_switch >"$LOGDIR/osken.log" 2>&1 &
    hp_on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
    MODE_FLAGS=(--fail-mode secure --controller "tcp:127.0.0.1:$CTL_PORT")
fi

hp_log "starting hairpind with ports p1..p$HOSTS"
ip netns exec "$SW" "$REPO/target/release/hairpind" --datapath-id 0x1 \
    --listen "ptcp:$OF_PORT:127.0.0.1" "${MODE_FLAGS[@]}" "${PORT_FLAGS[@]}" \
    >"$LOGDIR/hairpind.log" 2>&1 &
HAIRPIND=$!
hp_on_exit "kill $HAIRPIND 2>/dev/null; wait $HAIRPIND 2>/dev/null"
OFCTL=(ip netns exec "$SW" ovs-ofctl -O OpenFlow13)
hp_wait_for 10 "${OFCTL[@]}" show "tcp:127.0.0.1:$OF_PORT" || {
    cat "$LOGDIR/hairpind.log" >&2
    hp_die "hairpind did not come up"
}

failures=0
for ((a = 1; a <= HOSTS; a++)); do
    for ((b = 1; b <= HOSTS; b++)); do
        ((a == b)) && continue
        # The first pings of a pair may wait for the controller to connect and learn.
        if hp_wait_for 10 netns_ping "$PREFIX-h$a" "10.0.0.$b" 1; then
            hp_log "h$a -> h$b: ok"
        else
            hp_log "h$a -> h$b: FAILED"
            failures=$((failures + 1))
        fi
    done
done
hp_log "flows now in Hairpin:"
"${OFCTL[@]}" dump-flows "tcp:127.0.0.1:$OF_PORT" >&2

cat >&2 <<EOM

Hairpin is running in namespace $SW with ports p1..p$HOSTS to hosts $PREFIX-h1..h$HOSTS (10.0.0.1-$HOSTS).
  inspect:      ip netns exec $SW ovs-ofctl -O OpenFlow13 dump-flows tcp:127.0.0.1:$OF_PORT
  a host shell: ip netns exec $PREFIX-h1 bash
  your own controller: start it listening on 127.0.0.1:PORT inside $SW, then run
      ip netns exec $SW $REPO/target/release/hairpind --controller tcp:127.0.0.1:PORT ${PORT_FLAGS[*]}
  (stop this script first: it owns the ports). Logs: $LOGDIR
EOM
if ((failures)); then
    hp_die "$failures host pairs could not reach each other"
fi
if ((ONCE == 0)); then
    hp_log "press Ctrl-C to stop and clean up"
    wait "$HAIRPIND"
fi
