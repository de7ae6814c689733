//! Management commands of the logical-port layer: a legacy port's link state and speed, fed
//! by whoever watches the legacy switch (`port/set-link`), and the trunks with their counters
//! and legacy ports (`trunk/show`).

use std::sync::Arc;

use agent::Agent;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{CommandError, Registry};
use crate::legacy::LegacyLinks;

/// `port/set-link` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetLink {
    port: u32,
    up: bool,
    speed_mbps: Option<u32>,
}

fn params<T: serde::de::DeserializeOwned>(method: &str, value: Value) -> Result<T, CommandError> {
    serde_json::from_value(value).map_err(|e| CommandError::new(format!("{method}: {e}")))
}

/// Registers `port/set-link` and `trunk/show`.
pub fn register(registry: &mut Registry, agent: &Agent, legacy: &Arc<LegacyLinks>) {
    let (agent, links) = (agent.clone(), Arc::clone(legacy));
    registry.add(
        "port/set-link",
        "a legacy port's link state and speed: {\"port\": N, \"up\": BOOL, \"speed_mbps\": M}",
        move |value| {
            let p: SetLink = params("port/set-link", value)?;
            let status = links
                .set(&agent, p.port, p.up, p.speed_mbps)
                .map_err(|e| CommandError::new(e.to_string()))?;
            Ok(json!({ "port": p.port, "changed": status.is_some() }))
        },
    );
    let links = Arc::clone(legacy);
    registry.add(
        "trunk/show",
        "trunks: their counters and legacy ports",
        move |_| Ok(links.show()),
    );
}
