//! The client of hairpind's control socket (management commands that are not OpenFlow, in
//! the spirit of `ovs-appctl`): one JSON request line out, one response line back.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::CtlError;

/// Where hairpind serves management commands unless told otherwise.
pub const DEFAULT_CONTROL: &str = "/run/hairpin/hairpind.ctl";

/// Calls `method` with `params` on the daemon at `socket`; the result, or the daemon's error.
pub fn call(
    socket: &Path,
    timeout: Duration,
    method: &str,
    params: Value,
) -> Result<Value, CtlError> {
    let io = |e: std::io::Error| CtlError::Io(format!("{}: {e}", socket.display()));
    let mut stream = UnixStream::connect(socket).map_err(io)?;
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let mut request = json!({ "id": 1, "method": method, "params": params }).to_string();
    request.push('\n');
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                CtlError::Timeout(format!("no answer from {} to {method}", socket.display()))
            }
            _ => io(e),
        })?;
    let response: Value = serde_json::from_str(&line)
        .map_err(|e| CtlError::Protocol(format!("unreadable answer to {method}: {e}")))?;
    if let Some(error) = response.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed");
        return Err(CtlError::Command(message.to_string()));
    }
    response
        .get("result")
        .cloned()
        .ok_or_else(|| CtlError::Protocol(format!("answer to {method} without a result")))
}

/// The params of `hairpinctl call METHOD [PARAMS]`: JSON, or nothing.
pub fn parse_params(text: Option<&str>) -> Result<Value, CtlError> {
    match text {
        None => Ok(Value::Null),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| CtlError::Usage(format!("params are not JSON ({e}): {text}"))),
    }
}

/// A result as the operator reads it: a string as it is, anything else as indented JSON.
pub fn format_result(result: &Value) -> String {
    match result {
        Value::String(s) => format!("{s}\n"),
        Value::Null => String::new(),
        other => format!(
            "{}\n",
            serde_json::to_string_pretty(other).unwrap_or_default()
        ),
    }
}
