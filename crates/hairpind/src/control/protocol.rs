//! The control socket's messages: one JSON object per line each way.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `{"id": ..., "method": "area/verb", "params": ...}`; `id` is echoed back as it came.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    #[serde(default)]
    pub id: Value,
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

/// Why a command failed, as the operator reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandError {
    pub message: String,
}

impl CommandError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `{"id": ..., "result": ...}` or `{"id": ..., "error": {"message": ...}}`.
#[derive(Debug, Serialize)]
pub struct Response {
    id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<CommandError>,
}

impl Response {
    pub fn to(request: &Request, outcome: Result<Value, CommandError>) -> Self {
        let (result, error) = match outcome {
            Ok(value) => (Some(value), None),
            Err(e) => (None, Some(e)),
        };
        Self {
            id: request.id.clone(),
            result,
            error,
        }
    }

    /// The answer to a line that was not a request (its id is unknown: null).
    pub fn unparsed(error: CommandError) -> Self {
        Self {
            id: Value::Null,
            result: None,
            error: Some(error),
        }
    }

    /// The response as one line, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"id":null,"error":{"message":"response not encodable"}}"#.to_string()
        });
        line.push('\n');
        line
    }
}
