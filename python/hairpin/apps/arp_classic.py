"""The ARP responder written the classic way (seed 001 Fig. 3(a)): every request reaches the
controller as a PACKET_IN and a known target is answered with a PACKET_OUT built here.

Run it with ``osken-manager hairpin.apps.arp_classic``. It is the baseline the InSP responder
(``hairpin.apps.arp_insp``) is measured against (docs/bench/insp.md).
"""

from __future__ import annotations

from hairpin.apps.arp_common import ArpResponderBase


class ClassicArpResponder(ArpResponderBase):
    """Answers every ARP request for a known address from the controller."""
