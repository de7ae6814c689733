"""NAPALM drivers of ours: :mod:`.ovs` makes an Open vSwitch bridge a legacy switch."""
