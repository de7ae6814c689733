"""NAPALM finds community drivers as ``napalm_<platform>``: this makes platform ``hairpin_ovs``
(the Open vSwitch legacy-switch driver of :mod:`hairpin.harmless.drivers.ovs`) resolvable by
``napalm.get_network_driver``, Nornir's napalm connection and the ``napalm`` CLI alike."""

from hairpin.harmless.drivers.ovs import OvsDriver

__all__ = ["OvsDriver"]
