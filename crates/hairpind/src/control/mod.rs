//! Management commands, in the spirit of `ovs-appctl`: what an operator or a manager asks of
//! the daemon that is not OpenFlow (a logical port's link state fed from a legacy switch,
//! controllets, hardware placement, the daemon's own state).
//!
//! The daemon serves them on a unix socket as newline-delimited JSON. A request
//! `{"id": 1, "method": "area/verb", "params": {...}}` gets `{"id": 1, "result": ...}` or
//! `{"id": 1, "error": {"message": "..."}}`, one line each, in order; `params` may be left out.
//! `hairpinctl` is the usual client (`hairpinctl call METHOD [PARAMS]`), but anything that can
//! write a line to a socket can drive it. Each part of the daemon registers its commands in a
//! [`Registry`] at start-up; a handler runs on the socket's task and must not block for long.

pub mod controllers;
pub mod controllets;
pub mod daemon;
pub mod offload;
pub mod ports;
mod protocol;
pub mod templates;
pub mod timers;
pub mod trace;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

pub use protocol::{CommandError, Request, Response};

/// Longest request line accepted; a longer one closes the connection (a client that never
/// sends a newline cannot make the daemon buffer without end).
const MAX_REQUEST: usize = 1 << 20;

type Handler = Box<dyn Fn(Value) -> Result<Value, CommandError> + Send + Sync>;

struct Command {
    summary: &'static str,
    handler: Handler,
}

/// The commands the daemon answers, by method name.
#[derive(Default)]
pub struct Registry {
    commands: BTreeMap<&'static str, Command>,
}

impl Registry {
    /// A registry with the commands every daemon has: `help` and `version`.
    pub fn new() -> Self {
        let mut registry = Self::default();
        registry.add("version", "the daemon's name and version", |_| {
            Ok(json!({ "name": "hairpind", "version": env!("CARGO_PKG_VERSION") }))
        });
        registry
    }

    /// Registers `method` (`area/verb`); a second registration of a name replaces the first.
    pub fn add(
        &mut self,
        method: &'static str,
        summary: &'static str,
        handler: impl Fn(Value) -> Result<Value, CommandError> + Send + Sync + 'static,
    ) {
        self.commands.insert(
            method,
            Command {
                summary,
                handler: Box::new(handler),
            },
        );
    }

    /// Runs one request; never panics on any input.
    pub fn call(&self, request: &Request) -> Result<Value, CommandError> {
        if request.method == "help" {
            return Ok(self.help());
        }
        let command = self
            .commands
            .get(request.method.as_str())
            .ok_or_else(|| CommandError::new(format!("unknown method `{}`", request.method)))?;
        (command.handler)(request.params.clone())
    }

    fn help(&self) -> Value {
        let mut methods: BTreeMap<&str, &str> =
            self.commands.iter().map(|(m, c)| (*m, c.summary)).collect();
        methods.insert("help", "the methods this daemon answers");
        json!(methods)
    }

    /// Answers one request line.
    pub fn answer(&self, line: &str) -> Response {
        match serde_json::from_str::<Request>(line) {
            Ok(request) => Response::to(&request, self.call(&request)),
            Err(e) => Response::unparsed(CommandError::new(format!("bad request: {e}"))),
        }
    }
}

/// Binds the control socket at `path`. A stale file (nobody answers on it) is replaced; a
/// socket another daemon serves is left alone and reported as `AddrInUse`.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            "another daemon serves this control socket (give each its own --control-socket)",
        ));
    }
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let listener = UnixListener::bind(path)?;
    // Its commands start programs (controllets) and change the switch: root's only.
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(listener)
}

/// Serves `registry` on `listener` until the task is dropped.
pub async fn serve(listener: UnixListener, registry: Arc<Registry>) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let _ = session(stream, &registry).await;
        });
    }
}

async fn session(stream: UnixStream, registry: &Registry) -> io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        let n = (&mut lines)
            .take(MAX_REQUEST as u64 + 1)
            .read_line(&mut line)
            .await?;
        if n == 0 {
            return Ok(());
        }
        if n > MAX_REQUEST {
            let response = Response::unparsed(CommandError::new("request too long"));
            write.write_all(response.to_line().as_bytes()).await?;
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let response = registry.answer(&line);
        write.write_all(response.to_line().as_bytes()).await?;
    }
}

/// The control socket's path, removed when the daemon stops (only by the daemon that bound
/// it).
pub struct ControlSocket(pub PathBuf);

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add("test/echo", "returns its params", Ok);
        r.add("test/fail", "always fails", |_| {
            Err(CommandError::new("no"))
        });
        r
    }

    fn answer(r: &Registry, line: &str) -> Value {
        serde_json::from_str(&r.answer(line).to_line()).unwrap()
    }

    #[test]
    fn a_request_gets_its_result_with_its_id() {
        let r = registry();
        let v = answer(
            &r,
            r#"{"id": 7, "method": "test/echo", "params": {"a": 1}}"#,
        );
        assert_eq!(v, json!({"id": 7, "result": {"a": 1}}));
        let v = answer(&r, r#"{"id": "x", "method": "version"}"#);
        assert_eq!(v["result"]["name"], "hairpind");
        assert_eq!(v["id"], "x");
    }

    #[test]
    fn errors_name_what_went_wrong() {
        let r = registry();
        let v = answer(&r, r#"{"id": 1, "method": "test/fail"}"#);
        assert_eq!(v, json!({"id": 1, "error": {"message": "no"}}));
        let v = answer(&r, r#"{"id": 2, "method": "nope"}"#);
        assert_eq!(v["error"]["message"], "unknown method `nope`");
        for bad in [
            "",
            "{",
            "[1,2]",
            r#"{"id": 1}"#,
            r#"{"method": 5}"#,
            "\u{0}",
        ] {
            let v = answer(&r, bad);
            assert!(v["id"].is_null(), "{bad}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("bad request"), "{bad}: {message}");
        }
    }

    #[test]
    fn help_lists_every_method() {
        let v = answer(&registry(), r#"{"id": 1, "method": "help"}"#);
        let methods: Vec<&String> = v["result"].as_object().unwrap().keys().collect();
        assert_eq!(methods, ["help", "test/echo", "test/fail", "version"]);
    }

    #[tokio::test]
    async fn the_socket_answers_line_by_line_and_survives_bad_clients() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ctl");
        let listener = bind(&path).unwrap();
        let server = tokio::spawn(serve(listener, Arc::new(registry())));
        // A second daemon cannot take the socket while the first serves it.
        let taken = bind(&path).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AddrInUse);
        // A client that sends an endless line is cut off; the next one is served.
        let mut hog = UnixStream::connect(&path).await.unwrap();
        hog.write_all(&vec![b'x'; MAX_REQUEST + 10]).await.unwrap();
        let mut reply = String::new();
        BufReader::new(&mut hog)
            .read_line(&mut reply)
            .await
            .unwrap();
        assert!(reply.contains("request too long"), "{reply}");

        let stream = UnixStream::connect(&path).await.unwrap();
        let (read, mut write) = stream.into_split();
        write
            .write_all(b"{\"id\":1,\"method\":\"test/echo\",\"params\":3}\n\n{\"id\":2,\"method\":\"version\"}\n")
            .await
            .unwrap();
        let mut lines = BufReader::new(read).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(first, json!({"id": 1, "result": 3}));
        assert_eq!(second["id"], 2);
        server.abort();
    }
}
