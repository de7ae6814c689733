//! `controllers/list`: every OpenFlow connection with its role and what was dropped for it
//! (packet-ins over the packet-in limit, asynchronous messages it did not read in time).

use agent::Agent;
use serde_json::{json, Value};

use super::Registry;

pub fn register(registry: &mut Registry, agent: &Agent) {
    let agent = agent.clone();
    registry.add(
        "controllers/list",
        "OpenFlow connections: id, controller or client, role, packet-ins dropped by the \
         limit, asynchronous messages dropped by congestion",
        move |_| {
            let connections: Vec<Value> = agent
                .connection_stats()
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "controller": c.controller,
                        "role": format!("{:?}", c.role).to_lowercase(),
                        "packet_ins_limited": c.packet_ins_limited,
                        "async_dropped": c.async_dropped,
                    })
                })
                .collect();
            Ok(Value::Array(connections))
        },
    );
}
