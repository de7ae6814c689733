//! `timers/list`: the InSP timer triggers as the datapath threads run them (crates/ofp/INSP.md,
//! TIMER_MOD): template, period, ingress port, packets sent and periods missed.

use serde_json::{json, Value};

use super::Registry;
use crate::datapath::timers::Timers;

pub fn register(registry: &mut Registry, timers: Timers) {
    registry.add(
        "timers/list",
        "InSP timer triggers: template, period, ingress port, packets sent, periods missed",
        move |_| {
            let now = switch_core::clock::now_ns();
            let entries: Vec<Value> = timers
                .list(now)
                .iter()
                .map(|t| {
                    json!({
                        "timer_id": t.timer_id,
                        "pkttmp_id": t.pkttmp_id,
                        "period_us": t.period_ns / 1_000,
                        "in_port": t.in_port,
                        "sent": t.sent,
                        "missed": t.missed,
                        "next_in_us": t.next_in_ns / 1_000,
                    })
                })
                .collect();
            Ok(Value::Array(entries))
        },
    );
}
