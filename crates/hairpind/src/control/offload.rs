//! Management commands of hardware offload: `offload/show` (the profile, each hardware
//! table's occupancy, what placement did, what the model's hardware forwarded and dropped)
//! and `offload/flows` (every rule's location and hardware hits, by flow id).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use offload::model::ModelCounters;
use offload::sink::Offload;
use serde_json::{json, Value};

use super::Registry;

/// Registers the offload commands.
pub fn register(
    registry: &mut Registry,
    offload: Arc<Offload>,
    model: Option<Arc<ModelCounters>>,
    attached: Vec<(String, String)>,
) {
    let shown = Arc::clone(&offload);
    registry.add(
        "offload/show",
        "hardware offload: profile, table occupancy, placement counts, fast path counters",
        move |_| {
            let mut v = show(&shown, model.as_deref());
            v["xdp"] = json!(attached
                .iter()
                .map(|(ifname, mode)| json!({"interface": ifname, "mode": mode}))
                .collect::<Vec<_>>());
            Ok(v)
        },
    );
    registry.add(
        "offload/flows",
        "every rule of the hardware-served tables: location and hardware hits",
        move |_| Ok(flows(&offload)),
    );
}

fn show(offload: &Offload, model: Option<&ModelCounters>) -> Value {
    let state = offload.state();
    let p = &state.planner;
    let tables: Vec<Value> = offload
        .profile
        .tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (used, units) = p.occupancy(i);
            json!({
                "name": t.name,
                "openflow_table": t.openflow_table,
                "kind": format!("{:?}", t.kind).to_lowercase(),
                "entries": p.entries_in(i),
                "used_percent": if units == 0 { 0.0 } else { 100.0 * used as f64 / units as f64 },
                "capacity": t.structures.iter().map(|s| json!({"structure": s.name, "capacity": s.capacity})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let s = p.stats;
    json!({
        "profile": offload.profile.name,
        "device": offload.profile.device,
        "placement": p.mode.name(),
        "promotion": p.policy.name(),
        "tables": tables,
        "stats": {
            "entry_updates": s.entry_updates,
            "hw_writes": s.hw_writes,
            "evictions": s.evictions,
            "promotions": s.promotions,
            "demotions": s.demotions,
            // The profile's cost of a hardware write, times the writes: what programming the
            // device would have taken.
            "modelled_programming_ms": s.hw_writes as f64 * f64::from(offload.profile.insert_us) / 1000.0,
        },
        "fast_path": model.map(|m| json!({
            "decided": m.decided.load(Relaxed),
            "line_rate_drops": m.line_rate_drops.load(Relaxed),
            "punted": m.punted.load(Relaxed),
            "slow_path_drops": m.slow_path_drops.load(Relaxed),
        })),
    })
}

fn flows(offload: &Offload) -> Value {
    let state = offload.state();
    let mut rules: Vec<_> = state.planner.rules().collect();
    rules.sort_by_key(|r| (r.table, std::cmp::Reverse(r.priority), r.seq));
    Value::Array(
        rules
            .into_iter()
            .map(|r| {
                json!({
                    "flow_id": r.id.0,
                    "table": r.table,
                    "priority": r.priority,
                    "location": r.location(),
                    "hw_table": r.entry.as_ref().map(|e| offload.profile.tables[e.table].name.clone()),
                    "packets": r.counters.packets(),
                    "hw_packets": r.hw.packets.load(Relaxed),
                })
            })
            .collect(),
    )
}
