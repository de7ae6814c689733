//! The embedded bus: Debian's `nats-server`, started and supervised by hairpind when no
//! external bus is configured. Its configuration (users and their permissions, see `auth`) is
//! a root-only file in the host's run directory; adding or removing a controllet rewrites it
//! and reloads the server (SIGHUP), so credentials exist only while their controllet does.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::auth::{self, Account};
use crate::logs::Log;
use crate::spec::{Backoff, BusSpec};
use crate::supervise::{self, Handle};

/// The embedded server.
pub struct Embedded {
    pub spec: BusSpec,
    server_name: String,
    config_path: PathBuf,
    accounts: Mutex<BTreeMap<String, Account>>,
    pub handle: Handle,
}

impl Embedded {
    /// Writes the configuration with `accounts` and starts supervising the server; returns
    /// once it accepts connections.
    pub async fn start(
        spec: BusSpec,
        server_name: String,
        dir: &Path,
        accounts: Vec<Account>,
    ) -> io::Result<Arc<Embedded>> {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let (handle, stopped) = Handle::new(Arc::new(Mutex::new(Log::new(Some(
            &dir.join("nats-server.log"),
        )))));
        let server = Arc::new(Embedded {
            spec,
            server_name,
            config_path: dir.join("nats-server.json"),
            accounts: Mutex::new(accounts.into_iter().map(|a| (a.user.clone(), a)).collect()),
            handle: handle.clone(),
        });
        server.write_config()?;
        let program = server.spec.nats_server.clone();
        let config = server.config_path.clone();
        let launch = move || {
            tokio::process::Command::new(&program)
                .arg("-c")
                .arg(&config)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()
        };
        let backoff = Backoff {
            max: crate::spec::Period(Duration::from_secs(5)),
            ..Backoff::default()
        };
        tokio::spawn(supervise::supervise(
            handle,
            stopped,
            backoff,
            launch,
            |pid| signal(pid, libc::SIGTERM),
            |_| async {},
        ));
        let addr = server.spec.listen.clone();
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(&addr).await.is_err() {
            if Instant::now() > deadline {
                let log = server
                    .handle
                    .log
                    .lock()
                    .map(|l| l.tail(20))
                    .unwrap_or_default();
                return Err(io::Error::other(format!(
                    "nats-server ({}) does not accept connections on {addr}: {}",
                    server.spec.nats_server.display(),
                    log.join(" | ")
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(server)
    }

    /// Adds or replaces a user and reloads the server.
    pub fn set_account(&self, account: Account) -> io::Result<()> {
        self.accounts_mut().insert(account.user.clone(), account);
        self.reload()
    }

    /// Removes a user and reloads the server (its connections are closed).
    pub fn remove_account(&self, user: &str) -> io::Result<()> {
        if self.accounts_mut().remove(user).is_some() {
            self.reload()?;
        }
        Ok(())
    }

    fn accounts_mut(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Account>> {
        self.accounts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn reload(&self) -> io::Result<()> {
        self.write_config()?;
        if let Some(pid) = self.handle.status().pid {
            signal(pid, libc::SIGHUP);
        }
        Ok(())
    }

    fn write_config(&self) -> io::Result<()> {
        let accounts: Vec<Account> = self.accounts_mut().values().cloned().collect();
        let config = auth::server_config(
            &self.server_name,
            &self.spec.listen,
            self.spec.cluster.as_ref(),
            &accounts,
        );
        // Written aside and renamed, so the server never reads half a file.
        let tmp = self.config_path.with_extension("json.new");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        io::Write::write_all(&mut file, config.to_string().as_bytes())?;
        std::fs::rename(&tmp, &self.config_path)
    }

    /// Stops the server.
    pub fn stop(&self) {
        self.handle.stop();
    }
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) on the pid of the server this supervisor started.
    unsafe { libc::kill(pid as i32, signal) };
}
