"""The Python controllet SDK without a switch: the environment hairpind sets, and os-ken
messages encoded through the SDK's datapath as the switch will read them."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3_parser as parser

from hairpin.controllet import Datapath, Environment
from hairpin.testing.controllets import toml_value

ENV = {
    "HAIRPIN_CONTROLLET": "lsw",
    "HAIRPIN_DATAPATH_ID": "000000000000002a",
    "HAIRPIN_OPENFLOW": "unix:/run/hairpin/openflow.sock",
    "HAIRPIN_BUS_URL": "nats://127.0.0.1:4222",
    "HAIRPIN_BUS_USER": "controllet-lsw",
    "HAIRPIN_BUS_PASSWORD": "pw",
}


def test_environment_and_subjects() -> None:
    env = Environment.from_env(ENV)
    assert env.datapath_id == 42
    assert env.own_subject("learned") == "hairpin.000000000000002a.c.lsw.learned"
    assert env.ask_subject("switch", "ports") == "hairpin.000000000000002a.ask.switch.ports"
    assert env.inbox_prefix == "_INBOX_000000000000002a_lsw"
    with pytest.raises(ValueError, match="HAIRPIN_CONTROLLET is not set"):
        Environment.from_env({k: v for k, v in ENV.items() if k != "HAIRPIN_CONTROLLET"})
    with pytest.raises(ValueError, match="not unix:PATH"):
        Environment.from_env(ENV | {"HAIRPIN_OPENFLOW": "ssl:x"})


class Capture:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


def test_datapath_encodes_os_ken_messages_with_fresh_xids() -> None:
    capture = Capture()
    dp = Datapath(capture)  # type: ignore[arg-type]
    actions: list[Any] = [parser.OFPActionOutput(2)]
    dp.send_msg(
        parser.OFPPacketOut(dp, buffer_id=0xFFFFFFFF, in_port=1, actions=actions, data=b"x" * 14)
    )
    dp.send_msg(parser.OFPBarrierRequest(dp))
    version, msg_type, length, xid = struct.unpack_from("!BBHI", capture.data)
    assert (version, msg_type, xid) == (4, 13, 1)
    second = struct.unpack_from("!BBHI", capture.data, length)
    assert (second[1], second[3]) == (20, 2)
    assert len(capture.data) == length + 8


def test_toml_values() -> None:
    assert toml_value({"a": [1, "x"], "b": True}) == '{ a = [1, "x"], b = true }'
    with pytest.raises(TypeError):
        toml_value(object())
