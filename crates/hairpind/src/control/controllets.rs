//! Management commands for controllets and the bus: `controllet/start`, `controllet/stop`,
//! `controllet/list`, `controllet/logs` and `bus/status` (see docs/controllets.md).

use controllet_host::{ControlletSpec, Host};
use serde_json::{json, Value};

use super::{CommandError, Registry};

fn name_of(params: &Value) -> Result<&str, CommandError> {
    params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| CommandError::new("params need a controllet `name`"))
}

fn failed(e: controllet_host::HostError) -> CommandError {
    CommandError::new(e.0)
}

/// Registers the commands that act on `host`.
pub fn register(registry: &mut Registry, host: &Host) {
    let h = host.clone();
    registry.add(
        "controllet/start",
        "start a controllet: {\"name\"} for a declared one, or a whole declaration (name, program, args, ...)",
        move |params| {
            if params.get("program").is_some() {
                let spec: ControlletSpec = serde_json::from_value(params)
                    .map_err(|e| CommandError::new(format!("bad declaration: {e}")))?;
                h.start_new(spec).map_err(failed)
            } else {
                h.start_declared(name_of(&params)?).map_err(failed)
            }
        },
    );
    let h = host.clone();
    registry.add(
        "controllet/stop",
        "stop a controllet: {\"name\"}",
        move |params| h.stop(name_of(&params)?).map_err(failed),
    );
    let h = host.clone();
    registry.add(
        "controllet/list",
        "every controllet's state, confinement and limits at work",
        move |_| Ok(h.list()),
    );
    let h = host.clone();
    registry.add(
        "controllet/logs",
        "a controllet's last output lines: {\"name\", \"lines\": 100}",
        move |params| {
            let lines = params.get("lines").and_then(Value::as_u64).unwrap_or(100) as usize;
            Ok(json!(h.logs(name_of(&params)?, lines).map_err(failed)?))
        },
    );
    let h = host.clone();
    registry.add(
        "bus/status",
        "the message bus: embedded or external, its address and state",
        move |_| Ok(h.bus_status()),
    );
}
