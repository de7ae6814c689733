"""The legacy devices as a Nornir inventory, and a fleet that runs one step on all of them at
once through NAPALM.

Connection settings come from the deployment file (``platform``, ``hostname``, credentials
from the environment, ``optional_args``) or, when the file names one, from the operator's own
Nornir SimpleInventory, the file's settings completing or overriding the inventory's. A step is
a plain function of a NAPALM driver; :meth:`Fleet.run` runs it on every device in Nornir's
threaded runner and returns each device's value or exception, so the manager decides what a
failure means.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from nornir.core import Nornir
from nornir.core.inventory import (
    ConnectionOptions,
    Defaults,
    Groups,
    Host,
    Hosts,
    Inventory,
)
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.core.task import Result, Task
from nornir.plugins.inventory.simple import SimpleInventory
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm
from ruamel.yaml.error import YAMLError

from hairpin.harmless.config import ConfigError, Deployment, inventory_paths

T = TypeVar("T")

# Which configuration dialect each NAPALM platform speaks (see :mod:`.dialects`).
PLATFORM_DIALECTS = {
    "hairpin_ovs": "hairpin_ovs",
    "eos": "eos",
    "junos": "junos",
    "ios": "ios",
    "nxos": "nxos",
    "nxos_ssh": "nxos",
}


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """One device's result of a step: a value, or the exception that stopped it."""

    value: T | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _register_napalm() -> None:
    if CONNECTION_NAME not in ConnectionPluginRegister.available:
        ConnectionPluginRegister.register(CONNECTION_NAME, Napalm)


def build_inventory(deployment: Deployment) -> Inventory:
    """The Nornir inventory of the deployment's devices (and only those)."""
    spec = deployment.spec
    if spec.inventory is not None:
        files = {key: str(path) for key, path in inventory_paths(deployment)}
        try:
            loaded = SimpleInventory(**files).load()
        except (OSError, ValueError, YAMLError, AttributeError, TypeError) as e:
            # A file that is not YAML, or YAML of the wrong shape (a list of hosts, a host
            # that is a number): Nornir's loader raises whatever its code meets.
            mark = getattr(e, "problem_mark", None)
            where = f"{mark.name}:{mark.line + 1}" if mark is not None else files["host_file"]
            raise ConfigError([f"{where}: inventory of {deployment.path}: {e}"]) from e
        missing = [name for name in spec.devices if name not in loaded.hosts]
        if missing:
            raise ConfigError(
                [
                    f"{files['host_file']}: no host {name} (device of {deployment.path})"
                    for name in missing
                ]
            )
        hosts = Hosts({name: loaded.hosts[name] for name in spec.devices})
        groups, defaults = loaded.groups, loaded.defaults
    else:
        hosts, groups, defaults = Hosts(), Groups(), Defaults()
        for name in spec.devices:
            hosts[name] = Host(name=name, defaults=defaults)
    for name, device in spec.devices.items():
        host = hosts[name]
        username, password = deployment.credentials[name]
        for attribute, value in (
            ("hostname", device.hostname),
            ("platform", device.platform),
            ("port", device.port),
            ("username", username),
            ("password", password),
        ):
            if value is not None:
                setattr(host, attribute, value)
        params = host.get_connection_parameters(CONNECTION_NAME)
        extras = dict(params.extras or {})
        optional_args = {**extras.get("optional_args", {}), **device.optional_args}
        extras["optional_args"] = optional_args
        host.connection_options[CONNECTION_NAME] = ConnectionOptions(
            hostname=params.hostname,
            port=params.port,
            username=params.username,
            password=params.password,
            platform=params.platform,
            extras=extras,
        )
    return Inventory(hosts=hosts, groups=groups, defaults=defaults)


def dialect_name(deployment: Deployment, device: str, inventory: Inventory) -> str:
    """The configuration dialect of a device: its ``dialect``, else its platform's."""
    chosen = deployment.spec.devices[device].dialect
    if chosen is not None:
        return chosen
    platform = inventory.hosts[device].get_connection_parameters(CONNECTION_NAME).platform or ""
    if platform not in PLATFORM_DIALECTS:
        known = ", ".join(sorted(set(PLATFORM_DIALECTS.values())))
        raise ConfigError(
            [
                f"{deployment.path}: device {device}: platform `{platform}` has no HARMLESS "
                f"configuration dialect; set `dialect` to one of {known}"
            ]
        )
    return PLATFORM_DIALECTS[platform]


class Fleet:
    """The deployment's devices, each reached through one NAPALM connection kept open."""

    def __init__(self, deployment: Deployment, devices: Iterable[str] | None = None) -> None:
        _register_napalm()
        self.deployment = deployment
        self.inventory = build_inventory(deployment)
        wanted = set(devices) if devices is not None else set(deployment.spec.devices)
        self.inventory = self.inventory.filter(filter_func=lambda host: host.name in wanted)
        workers = deployment.spec.inventory.workers if deployment.spec.inventory else 10
        self.nornir = Nornir(inventory=self.inventory, runner=ThreadedRunner(num_workers=workers))

    @property
    def devices(self) -> list[str]:
        return list(self.inventory.hosts)

    def address(self, device: str) -> str:
        params = self.inventory.hosts[device].get_connection_parameters(CONNECTION_NAME)
        return f"{params.platform} {params.hostname}"

    def run(
        self,
        step: Callable[[Any, str], T],
        devices: Iterable[str] | None = None,
    ) -> dict[str, Outcome[T]]:
        """Runs ``step(driver, device)`` on each device (all by default) in parallel."""
        chosen = set(devices) if devices is not None else set(self.devices)

        def task(task: Task) -> Result:
            driver = task.host.get_connection(CONNECTION_NAME, task.nornir.config)
            return Result(host=task.host, result=step(driver, task.host.name))

        target = self.nornir.filter(filter_func=lambda host: host.name in chosen)
        target.data.reset_failed_hosts()
        results = target.run(task=task, on_failed=True)
        outcomes: dict[str, Outcome[T]] = {}
        for name, multi in results.items():
            result = multi[0]
            if result.failed:
                # A failed open keeps no connection: the next step tries to open again.
                error = result.exception or RuntimeError(str(result.result))
                outcomes[name] = Outcome(error=error)
            else:
                outcomes[name] = Outcome(value=result.result)
        return outcomes

    def close(self) -> None:
        self.nornir.close_connections(on_good=True, on_failed=True)
