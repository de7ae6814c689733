"""Context managers that build throw-away test networks: namespaces, veth cables, OVS instances.

Everything they create is removed when the ``with`` block ends, whether it ends normally or not.
:func:`unavailable_reason` says why they cannot run on this machine, for pytest skips.
"""

import os
import shutil

REQUIRED_TOOLS = ("ip", "ethtool", "ping", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl")


def unavailable_reason() -> str | None:
    """Why these helpers cannot run here (not root, a tool missing), or None when they can."""
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)}: run scripts/setup.sh"
    return None
