"""The HARMLESS manager: turns a legacy 802.1Q switch's access ports into Hairpin's OpenFlow
ports with one command, and puts the switch back with another (seed paper "Transition to SDN
is HARMLESS", section III, "HARMLESS Manager").

The way of ``up``: read the deployment file (:mod:`.config`), open every legacy device through
NAPALM in parallel (:mod:`.inventory`, Nornir), check the ports and VLANs and render the
device's candidate configuration (:mod:`.plan`, :mod:`.dialects`), save the running
configuration (:mod:`.backup`), commit, write ``hairpind``'s TOML and start it
(:mod:`.hairpind`), and undo every step when one fails (:mod:`.manager`). :mod:`.watch` turns
legacy link changes into PORT_STATUS; :mod:`.capex` is the paper's cost model.

The Open vSwitch driver (:mod:`.drivers.ovs`) makes a private Open vSwitch in standalone mode
behave as a legacy switch behind NAPALM's NetworkDriver interface, so the manager has one code
path for it and for vendor devices.
"""
