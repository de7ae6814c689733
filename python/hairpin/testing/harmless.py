"""HARMLESS sites for tests: legacy 802.1Q switches (:mod:`.legacy`) with hosts on their access
ports, and a trunk from each to the namespace where `hairpind` runs with the access ports as its
logical ports (seed 000 Figs. 2-3).

:func:`legacy_site` builds the network: for each legacy switch ``L``, hosts ``L.access`` on
access ports in VLANs 101, 102, ... (the legacy port names are ``ge1``, ``ge2``, ...), optional
hosts ``L.ordinary`` on access ports of VLAN 10 that stay legacy, and a trunk (``up0`` on the
legacy side, ``trL`` in the switch namespace) carrying the access VLANs. Access hosts get
10.0.0.N/24 (N counting across switches), ordinary hosts 10.0.1.N/24. :func:`run_hairpind`
then starts `hairpind` in the switch namespace with one logical port per access port.
Everything is removed when the ``with`` blocks end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hairpin.testing.legacy import AccessPort, LegacySwitch
from hairpin.testing.netns import Host, Namespace, cabled_host, link, namespace, unique_prefix
from hairpin.testing.ovs import OvsInstance, ovs_instance
from hairpin.testing.topology import Hairpind, background, hairpind_command, wait_until

# Inside the switch namespace: hairpind's OpenFlow listener, and where controllers listen.
SWITCH_OF_PORT = 16800
CONTROLLER_PORT = 16801
FIRST_VLAN = 101
ORDINARY_VLAN = 10


@dataclass
class LegacySite:
    """Legacy switches and the namespace where hairpind and controllers run."""

    switch: Namespace
    legacy: list[LegacySwitch] = field(default_factory=list)

    @property
    def access(self) -> list[AccessPort]:
        return [port for sw in self.legacy for port in sw.access]

    @property
    def access_hosts(self) -> list[Host]:
        return [port.host for port in self.access]

    def of_port(self, port: AccessPort) -> int:
        """The OpenFlow port an access port becomes: its place among all access ports
        (its host is 10.0.0.N, N the same number)."""
        return self.access.index(port) + 1

    def hairpind_args(
        self, only: Sequence[AccessPort] | None = None, native: AccessPort | None = None
    ) -> list[str]:
        """``--trunk`` and ``--port`` flags: one trunk per legacy switch, one logical port per
        access port (or per port of ``only``), named after it; ``native`` becomes its trunk's
        native port."""
        args = []
        for index, sw in enumerate(self.legacy, start=1):
            args += ["--trunk", f"sw{index}={sw.trunk}"]
            for port in sw.access:
                if only is not None and port not in only:
                    continue
                vlan = "native" if port is native else str(port.vlan)
                args += ["--port", f"{self.of_port(port)}=sw{index}:{vlan}:{port.name}"]
        return args


@contextmanager
def legacy_site(
    access: Sequence[int] = (4,),
    ordinary: int = 0,
    extra_vlans: Sequence[int] = (),
    native_vlan: int | None = None,
    qinq: bool = False,
) -> Iterator[LegacySite]:
    """Legacy switches with ``access[i]`` access hosts on switch i, ``ordinary`` VLAN-10 hosts
    on the first, and a trunk from each into the switch namespace.

    ``extra_vlans``: more access hosts on the first switch in these VLANs, carried on its trunk
    but without a logical port unless the caller adds one. ``native_vlan``: the first switch's
    trunk sends this VLAN untagged (its native VLAN). ``qinq``: access ports tunnel a host's own
    tags (802.1Q in 802.1Q) instead of refusing tagged frames.
    """
    prefix = unique_prefix()
    with ExitStack() as stack:
        switch = stack.enter_context(namespace(f"{prefix}-sw"))
        site = LegacySite(switch)
        of_port = 1
        for index, count in enumerate(access, start=1):
            ns = stack.enter_context(namespace(f"{prefix}-l{index}"))
            trunk = f"tr{index}"
            link(ns, "up0", switch, trunk)
            vlans = [FIRST_VLAN + i for i in range(count)]
            if index == 1:
                vlans += list(extra_vlans)
            ports: list[AccessPort] = []
            for number, vlan in enumerate(vlans, start=1):
                name = f"ge{number}"
                address = f"10.0.0.{of_port}"
                host = cabled_host(stack, f"{prefix}-h{of_port}", ns, name, address)
                ports.append(AccessPort(name, vlan, host))
                of_port += 1
            ordinary_hosts: list[Host] = []
            for number in range(1, (ordinary if index == 1 else 0) + 1):
                address = f"10.0.1.{number}"
                host = cabled_host(stack, f"{prefix}-o{number}", ns, f"ord{number}", address)
                ordinary_hosts.append(host)
            ovs = stack.enter_context(ovs_instance(ns))
            _configure_legacy(ovs, ports, len(ordinary_hosts), native_vlan, qinq)
            site.legacy.append(LegacySwitch(ns, ovs, ports, "up0", trunk, ordinary_hosts))
        yield site


def _configure_legacy(
    ovs: OvsInstance,
    ports: list[AccessPort],
    ordinary: int,
    native_vlan: int | None,
    qinq: bool,
) -> None:
    """A standalone (NORMAL) netdev bridge: access ports in their VLANs, ordinary ports in
    VLAN 10, and the trunk ``up0`` carrying the access VLANs."""
    vlans = sorted({p.vlan for p in ports})
    args = ["--", "set", "Open_vSwitch", ".", "other_config:vlan-limit=0"]
    args += ["--", "add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev"]
    args += ["fail-mode=standalone", "other-config:forward-bpdu=true"]
    for port in ports:
        args += ["--", "add-port", "br0", port.name, "--", "set", "port", port.name]
        args += [f"tag={port.vlan}"]
        if qinq:
            args += ["vlan_mode=dot1q-tunnel", "other_config:qinq-ethtype=802.1q"]
    for number in range(1, ordinary + 1):
        args += ["--", "add-port", "br0", f"ord{number}", "--", "set", "port", f"ord{number}"]
        args += [f"tag={ORDINARY_VLAN}"]
    args += ["--", "add-port", "br0", "up0", "--", "set", "port", "up0"]
    args += [f"trunks={','.join(str(v) for v in vlans)}"]
    if native_vlan is None:
        args += ["vlan_mode=trunk"]
    else:
        args += [f"tag={native_vlan}", "vlan_mode=native-untagged"]
    ovs.vsctl(*args)
    ovs.ns.run("ip", "link", "set", "br0", "up")


@contextmanager
def run_hairpind(
    site: LegacySite,
    workdir: Path,
    ports: Sequence[str] | None = None,
    controller: bool = True,
    extra_args: Sequence[str] = (),
) -> Iterator[Hairpind]:
    """hairpind in the switch namespace with ``ports`` (default: the site's logical ports),
    connecting to a controller on ``CONTROLLER_PORT`` unless ``controller`` is false."""
    log_path = workdir / "hairpind.log"
    control_path = workdir / "hairpind.ctl"
    unix_path = workdir / "hairpind.sock"
    args = hairpind_command(
        SWITCH_OF_PORT, control_path, controller_port=CONTROLLER_PORT if controller else None
    )
    args += ["--listen", f"punix:{unix_path}"]
    args += list(site.hairpind_args() if ports is None else ports)
    args += list(extra_args)
    with background(site.switch, args, log_path) as process:
        daemon = Hairpind(
            site.switch, process, log_path, control_path, SWITCH_OF_PORT, CONTROLLER_PORT, unix_path
        )
        daemon.wait_listening()

        def links_up() -> bool:
            # A veth's carrier follows its peer's within a second (the kernel's link watch):
            # until then the trunk drops what is sent to it.
            return "LINK_DOWN" not in daemon.ofctl("dump-ports-desc")

        if not wait_until(links_up, 10.0):
            raise RuntimeError(
                f"hairpind's ports did not come up:\n{daemon.ofctl('dump-ports-desc')}"
            )
        yield daemon
