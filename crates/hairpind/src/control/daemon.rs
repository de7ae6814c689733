//! The daemon's own state for operators: `summary` (datapath threads, ports, tables and
//! OpenFlow connections, with their counters) and the log level (`log/level`,
//! `log/set-level`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{CommandError, Registry};
use crate::log::{self, Level};
use crate::status::{self, Sources};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetLevel {
    level: String,
}

pub fn register(registry: &mut Registry, sources: Sources) {
    registry.add(
        "summary",
        "datapath threads, ports, trunks, tables and OpenFlow connections with their counters",
        move |_| {
            serde_json::to_value(status::gather(&sources))
                .map_err(|e| CommandError::new(e.to_string()))
        },
    );
    registry.add("log/level", "the log level", |_| {
        Ok(json!({ "level": log::level().name() }))
    });
    registry.add(
        "log/set-level",
        "sets the log level: {\"level\": \"error|warn|info|debug\"}",
        |value: Value| {
            let p: SetLevel = serde_json::from_value(value)
                .map_err(|e| CommandError::new(format!("log/set-level: {e}")))?;
            let level = Level::parse(&p.level).ok_or_else(|| {
                CommandError::new(format!(
                    "log/set-level: `{}` is not a level (error, warn, info, debug)",
                    p.level
                ))
            })?;
            let was = log::level();
            log::set_level(level);
            crate::log!(
                Level::Info,
                "log level {} (was {})",
                level.name(),
                was.name()
            );
            Ok(json!({ "level": level.name(), "was": was.name() }))
        },
    );
}
