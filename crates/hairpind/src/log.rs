//! The daemon's log: lines on stderr (where systemd's journal or a test harness collects
//! them), filtered by a level set at start (`--log-level`) and changed at run time
//! (`log/set-level`). One atomic load decides whether a message is written; nothing on the
//! datapath logs.

use std::sync::atomic::{AtomicU8, Ordering};

/// How severe a message is; a level shows itself and everything more severe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::Error, Level::Warn, Level::Info, Level::Debug];

    pub fn parse(s: &str) -> Option<Level> {
        Self::ALL.into_iter().find(|l| l.name() == s)
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);

pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

pub fn level() -> Level {
    let v = LEVEL.load(Ordering::Relaxed);
    Level::ALL
        .into_iter()
        .find(|l| *l as u8 == v)
        .unwrap_or(Level::Info)
}

pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one message if its level is enabled: `hairpind: MESSAGE`, with the level named for
/// debug messages.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)*) => {
        if $crate::log::enabled($level) {
            if $level == $crate::log::Level::Debug {
                eprintln!("hairpind: debug: {}", format_args!($($arg)*));
            } else {
                eprintln!("hairpind: {}", format_args!($($arg)*));
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_shows_itself_and_what_is_more_severe() {
        set_level(Level::Warn);
        assert!(enabled(Level::Error) && enabled(Level::Warn));
        assert!(!enabled(Level::Info) && !enabled(Level::Debug));
        assert_eq!(level(), Level::Warn);
        set_level(Level::Debug);
        assert!(enabled(Level::Debug));
        assert_eq!(Level::parse("info"), Some(Level::Info));
        assert_eq!(Level::parse("loud"), None);
        set_level(Level::Info);
    }
}
