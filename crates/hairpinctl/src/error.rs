//! Everything that can make a `hairpinctl` command fail.

use std::fmt;

use ofp::OfpError;

use crate::error_names::describe_error;
use crate::syntax::SyntaxError;

#[derive(Debug)]
pub enum CtlError {
    /// A flow, group or meter text that does not parse; `context` says where it came from.
    Syntax {
        error: SyntaxError,
        context: Option<String>,
    },
    /// A bad argument or unreadable input file.
    Usage(String),
    /// The connection failed.
    Io(String),
    /// The switch said something this tool does not expect.
    Protocol(String),
    /// No answer within the timeout.
    Timeout(String),
    /// The switch answered with OFPT_ERROR; `context` names the request (e.g. a file line).
    Switch {
        error: OfpError,
        context: Option<String>,
    },
    /// Several failures of one batch, in order.
    Several(Vec<CtlError>),
    /// A management command the daemon refused, with its reason.
    Command(String),
}

impl CtlError {
    pub fn switch(error: OfpError) -> Self {
        CtlError::Switch {
            error,
            context: None,
        }
    }
}

impl From<SyntaxError> for CtlError {
    fn from(error: SyntaxError) -> Self {
        CtlError::Syntax {
            error,
            context: None,
        }
    }
}

/// Writes ` (context)` when there is one.
fn with_context(f: &mut fmt::Formatter<'_>, context: &Option<String>) -> fmt::Result {
    match context {
        Some(c) => write!(f, " [{c}]"),
        None => Ok(()),
    }
}

impl fmt::Display for CtlError {
    /// One line per failure; lines after the first start with `error: ` like the first one
    /// (which `main` prefixes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtlError::Syntax { error, context } => {
                write!(f, "syntax error at {error}")?;
                with_context(f, context)
            }
            CtlError::Usage(m)
            | CtlError::Io(m)
            | CtlError::Protocol(m)
            | CtlError::Timeout(m)
            | CtlError::Command(m) => f.write_str(m),
            CtlError::Switch { error, context } => {
                f.write_str(&describe_error(error))?;
                with_context(f, context)
            }
            CtlError::Several(errors) => {
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\nerror: ")?;
                    }
                    write!(f, "{e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CtlError {}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::{BadMatchCode, FlowModFailedCode};

    #[test]
    fn switch_errors_use_spec_names_and_context() {
        let e = CtlError::switch(OfpError::BadMatch(BadMatchCode::BadPrereq));
        assert_eq!(
            e.to_string(),
            "OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (type=4, code=9)"
        );
        let e = CtlError::Switch {
            error: OfpError::FlowModFailed(FlowModFailedCode::TableFull),
            context: Some("flows.txt:3".into()),
        };
        assert_eq!(
            e.to_string(),
            "OFPET_FLOW_MOD_FAILED/OFPFMFC_TABLE_FULL (type=5, code=1) [flows.txt:3]"
        );
    }

    #[test]
    fn several_errors_print_one_per_line() {
        let e = CtlError::Several(vec![
            CtlError::Usage("first".into()),
            CtlError::Usage("second".into()),
        ]);
        assert_eq!(format!("error: {e}"), "error: first\nerror: second");
    }

    #[test]
    fn syntax_errors_name_the_token() {
        let e = CtlError::Syntax {
            error: SyntaxError::new("frob", "unknown action"),
            context: Some("f:2".into()),
        };
        assert_eq!(
            e.to_string(),
            "syntax error at `frob`: unknown action [f:2]"
        );
    }
}
