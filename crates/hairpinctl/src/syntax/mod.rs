//! The text syntax of flows, groups and meters: a practical subset of `ovs-fields(7)` and
//! `ovs-actions(7)`. Every parser here has a printer that uses the same names, so what
//! `dump-flows` prints can be fed back to `add-flow`.

pub mod actions;
pub mod fields;
pub mod flow;
pub mod group;
pub mod matching;
pub mod meter;
pub mod value;

use std::fmt;

/// A syntax error that names the offending token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub token: String,
    pub reason: String,
}

impl SyntaxError {
    pub fn new(token: &str, reason: impl Into<String>) -> Self {
        SyntaxError {
            token: token.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.token, self.reason)
    }
}

impl std::error::Error for SyntaxError {}

/// Splits `text` at commas and whitespace that are not inside parentheses; empty pieces
/// are dropped.
pub fn split_top_level(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' | '\t' | '\r' | '\n' if depth == 0 => {
                if let Some(piece) = text.get(start..i).filter(|p| !p.is_empty()) {
                    tokens.push(piece);
                }
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    if let Some(piece) = text.get(start..).filter(|p| !p.is_empty()) {
        tokens.push(piece);
    }
    tokens
}

/// Splits `name=value` (or `name:value` when `colon` is allowed) at the first separator.
pub fn split_assignment(token: &str, colon: bool) -> Option<(&str, &str)> {
    let at = token.find(|c| c == '=' || (colon && c == ':'))?;
    Some((token.get(..at)?, token.get(at + 1..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_commas_and_spaces_outside_parentheses() {
        let tokens = split_top_level("a=1, b=2 c,write_actions(output:1,output:2) ,d");
        assert_eq!(
            tokens,
            ["a=1", "b=2", "c", "write_actions(output:1,output:2)", "d"]
        );
    }

    #[test]
    fn assignment_split_respects_colon_choice() {
        assert_eq!(split_assignment("weight:10", true), Some(("weight", "10")));
        assert_eq!(split_assignment("weight:10", false), None);
        assert_eq!(split_assignment("a=b=c", false), Some(("a", "b=c")));
    }

    #[test]
    fn error_names_the_token() {
        let e = SyntaxError::new("nw_src=1.2.3", "bad IPv4 address");
        assert_eq!(e.to_string(), "`nw_src=1.2.3`: bad IPv4 address");
    }
}
