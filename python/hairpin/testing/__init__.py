"""Context managers that build throw-away test networks: namespaces, veth cables, OVS instances.

Everything they create is removed when the ``with`` block ends, whether it ends normally or not.
They need root (network namespaces); :func:`require_root_reason` says why a test must skip.
"""

import os


def require_root_reason() -> str | None:
    """Why these helpers cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    return None
