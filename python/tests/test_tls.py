"""TLS OpenFlow channels: `ovs-ofctl` over `ssl:` against hairpind's `pssl:` listener, an
os-ken controller over TLS as hairpind's `ssl:` controller, and the peers TLS must refuse (a
certificate from another CA, an expired one, none at all, plain TCP), each refused and logged
while an established TLS channel keeps working.

Every key and certificate is made by the test in its own directory (hairpin.testing.pki).
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hairpin.testing.daemon import (
    OFPT_ECHO_REPLY,
    OFPT_ECHO_REQUEST,
    HairpinDaemon,
    OfClient,
    find_hairpind,
    running_hairpind,
    wait_for_tcp,
)
from hairpin.testing.pki import CertificateAuthority, Identity

OSKEN_MANAGER = Path(sys.executable).parent / "osken-manager"
# This file's OpenFlow ports (17000-17024 belong to the TLS and packet-in tests).
PSSL_PORT = 17000
OSKEN_PORT = 17001
ROGUE_PORT = 17002
EXPIRED_PORT = 17003
OSKEN_UNUSED_TCP_PORT = 17004


@dataclass
class Pki:
    ca: CertificateAuthority
    switch: Identity
    controller: Identity
    expired: Identity
    rogue_ca: CertificateAuthority
    rogue: Identity


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    ca = CertificateAuthority(tmp_path, "site")
    rogue_ca = CertificateAuthority(tmp_path, "rogue")
    return Pki(
        ca=ca,
        switch=ca.issue("switch"),
        # No address in it: like Open vSwitch, the switch checks the CA's signature, not names.
        controller=ca.issue("controller"),
        expired=ca.issue("old-controller", expired=True),
        rogue_ca=rogue_ca,
        rogue=rogue_ca.issue("intruder", ip="127.0.0.1"),
    )


def tls_args(pki: Pki) -> list[str]:
    return [
        "--private-key",
        str(pki.switch.private_key),
        "--certificate",
        str(pki.switch.certificate),
        "--ca-cert",
        str(pki.ca.certificate),
    ]


def ofctl(
    identity: Identity, ca: Path, target: str, command: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """`ovs-ofctl COMMAND TARGET ARGS...` presenting `identity` and trusting `ca`."""
    tls = ["--private-key", str(identity.private_key), "--certificate", str(identity.certificate)]
    return subprocess.run(
        ["ovs-ofctl", "-O", "OpenFlow13", *tls, "--ca-cert", str(ca), command, target, *args],
        capture_output=True,
        text=True,
        timeout=20,
    )


def tls_client(identity: Identity, ca: Path, port: int) -> OfClient:
    """An OpenFlow connection over TLS to 127.0.0.1:port presenting `identity`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.load_verify_locations(str(ca))
    context.load_cert_chain(str(identity.certificate), str(identity.private_key))
    raw = socket.create_connection(("127.0.0.1", port), 10)
    return OfClient(sock=context.wrap_socket(raw))


def echo(client: OfClient) -> None:
    reply = client.request(OFPT_ECHO_REQUEST, b"still here")[-1]
    assert (reply.msg_type, reply.body) == (OFPT_ECHO_REPLY, b"still here")


@pytest.fixture
def tls_switch(pki: Pki) -> Iterator[HairpinDaemon]:
    listen = ["--listen", f"pssl:{PSSL_PORT}:127.0.0.1"]
    with running_hairpind(extra_args=listen + tls_args(pki)) as daemon:
        # The probe connects and leaves without a handshake: the first refusal logged.
        wait_for_tcp(PSSL_PORT, 10.0, daemon.process)
        wait_for_refusals(daemon, 1)
        yield daemon


def refusals(daemon: HairpinDaemon) -> int:
    return daemon.log().count(f"pssl:127.0.0.1:{PSSL_PORT}: refused")


def wait_for_refusals(daemon: HairpinDaemon, count: int) -> None:
    deadline = time.monotonic() + 10
    while refusals(daemon) < count:
        assert time.monotonic() < deadline, f"not {count} refusals logged:\n{daemon.log()}"
        time.sleep(0.05)


def test_ovs_ofctl_over_ssl_and_every_bad_peer_refused(pki: Pki, tls_switch: HairpinDaemon) -> None:
    target = f"ssl:127.0.0.1:{PSSL_PORT}"
    with tls_client(pki.controller, pki.ca.certificate, PSSL_PORT) as standing:
        standing.handshake()
        assert standing.datapath_id == 1
        added = ofctl(
            pki.controller, pki.ca.certificate, target, "add-flow", "priority=7,actions=drop"
        )
        assert added.returncode == 0, added.stderr
        dumped = ofctl(pki.controller, pki.ca.certificate, target, "dump-flows")
        assert dumped.returncode == 0, dumped.stderr
        assert "priority=7 actions=drop" in dumped.stdout, dumped.stdout
        assert refusals(tls_switch) == 1, tls_switch.log()

        bad_peers = {
            "a certificate from another CA": (pki.rogue, pki.ca.certificate),
            "an expired certificate": (pki.expired, pki.ca.certificate),
        }
        for n, (why, (identity, ca)) in enumerate(bad_peers.items(), start=2):
            result = ofctl(identity, ca, target, "dump-flows")
            assert result.returncode != 0, f"{why} was let in: {result.stdout}"
            wait_for_refusals(tls_switch, n)
            echo(standing)

        # No certificate at all, and no TLS at all: raw OpenFlow on the TLS port.
        with socket.create_connection(("127.0.0.1", PSSL_PORT), 10) as raw:
            raw.sendall(bytes.fromhex("04000008 00000001"))
            raw.settimeout(10)
            assert raw.recv(4096)[:1] != b"\x04", "plain OpenFlow got an OpenFlow answer"
        wait_for_refusals(tls_switch, 4)
        plain = ofctl(pki.controller, pki.ca.certificate, f"tcp:127.0.0.1:{PSSL_PORT}", "show")
        assert plain.returncode != 0, plain.stdout
        wait_for_refusals(tls_switch, 5)
        anonymous = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        anonymous.check_hostname = False
        anonymous.load_verify_locations(str(pki.ca.certificate))
        with (
            socket.create_connection(("127.0.0.1", PSSL_PORT), 10) as raw,
            pytest.raises((ssl.SSLError, ConnectionError)),
            anonymous.wrap_socket(raw) as sock,
        ):
            # TLS 1.3 finishes the client's side of the handshake before the server checks
            # the (missing) certificate: the refusal shows on the first read.
            sock.sendall(bytes.fromhex("04000008 00000001"))
            assert not sock.recv(4096), "a peer without a certificate got an answer"
            raise ConnectionError("closed")
        wait_for_refusals(tls_switch, 6)

        echo(standing)
        tls_switch.assert_alive()
    log = tls_switch.log()
    reasons = ("UnknownIssuer", "certificate expired", "InvalidContentType", "no certificates")
    for reason in reasons:
        assert reason in log, f"the log does not say {reason}:\n{log}"


def serve_tls_once(
    identity: Identity, ca: Path, port: int, outcome: dict[int, str]
) -> socket.socket:
    """Listens on `port` as a TLS controller presenting `identity` and records in `outcome`
    how the first handshake went."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(identity.certificate), str(identity.private_key))
    context.load_verify_locations(str(ca))
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", port))

    def accept() -> None:
        conn, _ = listener.accept()
        conn.settimeout(10)
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                outcome[port] = "accepted"
                tls.recv(1)
        except (OSError, ssl.SSLError) as e:
            outcome.setdefault(port, f"failed: {e}")

    threading.Thread(target=accept, daemon=True).start()
    return listener


OSKEN_APP = '''
"""Installs one flow when a switch connects: proof that the TLS channel carries both ways."""
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3


class Installer(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        parser = dp.ofproto_parser
        dp.send_msg(parser.OFPFlowMod(dp, priority=42, match=parser.OFPMatch(in_port=3),
                                      instructions=[]))
'''


def test_osken_controller_over_ssl_and_controllers_with_bad_certificates(
    pki: Pki, tmp_path: Path
) -> None:
    app = tmp_path / "installer.py"
    app.write_text(OSKEN_APP)
    log_path = tmp_path / "osken.log"
    outcome: dict[int, str] = {}
    rogue = serve_tls_once(pki.rogue, pki.ca.certificate, ROGUE_PORT, outcome)
    expired = serve_tls_once(pki.expired, pki.ca.certificate, EXPIRED_PORT, outcome)
    with log_path.open("wb") as log:
        osken = subprocess.Popen(
            [
                str(OSKEN_MANAGER),
                "--ofp-listen-host",
                "127.0.0.1",
                "--ofp-ssl-listen-port",
                str(OSKEN_PORT),
                "--ofp-tcp-listen-port",
                str(OSKEN_UNUSED_TCP_PORT),
                "--ctl-privkey",
                str(pki.controller.private_key),
                "--ctl-cert",
                str(pki.controller.certificate),
                "--ca-certs",
                str(pki.ca.certificate),
                str(app),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    controllers = [f"ssl:127.0.0.1:{p}" for p in (OSKEN_PORT, ROGUE_PORT, EXPIRED_PORT)]
    try:
        wait_for_tcp(OSKEN_PORT, 30.0, osken)
        with running_hairpind(controllers=controllers, extra_args=tls_args(pki)) as switch:
            deadline = time.monotonic() + 20
            while True:
                flows = subprocess.run(
                    ["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", switch.ofctl_target],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                if "priority=42,in_port=3" in flows:
                    break
                assert time.monotonic() < deadline, f"{flows}\n{log_path.read_text()}"
                assert osken.poll() is None, log_path.read_text()
                time.sleep(0.1)
            while len(outcome) < 2 or switch.log().count(": refused:") < 2:
                assert time.monotonic() < deadline, f"{outcome}\n{switch.log()}"
                time.sleep(0.1)
            log = switch.log()
            switch.assert_alive()
    finally:
        osken.terminate()
        osken.wait(10)
        rogue.close()
        expired.close()
    refused = "refused: invalid peer certificate"
    assert f"ssl:127.0.0.1:{ROGUE_PORT}: {refused}: UnknownIssuer" in log, log
    assert f"ssl:127.0.0.1:{EXPIRED_PORT}: {refused}: certificate expired" in log, log
    assert not outcome[ROGUE_PORT].startswith("accepted"), outcome
    assert not outcome[EXPIRED_PORT].startswith("accepted"), outcome


def test_unusable_tls_files_stop_the_daemon_naming_the_field(pki: Pki, tmp_path: Path) -> None:
    good = {
        "private_key": pki.switch.private_key,
        "certificate": pki.switch.certificate,
        "ca_cert": pki.ca.certificate,
    }
    bad = {
        "ca_cert": tmp_path / "missing.pem",
        # A key that does not go with the certificate.
        "private_key": pki.ca.issue("other").private_key,
        # A file with no certificate in it.
        "certificate": pki.switch.private_key,
    }
    for field_name, path in bad.items():
        files = {**good, field_name: path}
        args = [str(find_hairpind()), "--listen", f"pssl:{PSSL_PORT}:127.0.0.1"]
        args += ["--control-socket", str(tmp_path / "ctl")]
        for name, file in files.items():
            args += [f"--{name.replace('_', '-')}", str(file)]
        result = subprocess.run(args, capture_output=True, text=True, timeout=20)
        assert result.returncode == 2, (field_name, result)
        assert f"field `{field_name}`" in result.stderr, result.stderr
