//! Keeps a child process running: starts it, keeps its output, restarts it with backoff when
//! it dies, and stops it gracefully (a termination signal, then SIGKILL after a grace period).
//! Used for every controllet and for the embedded `nats-server`.

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::sync::watch;

use crate::logs::{Log, MAX_LINE};
use crate::spec::Backoff;

/// How long a stopped process may take to exit after its termination signal.
pub const GRACE: Duration = Duration::from_secs(2);

/// Where a supervised process is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Starting,
    Running,
    /// Died; waits before the next start.
    Backoff,
    Stopped,
}

/// What the supervisor knows of its process.
#[derive(Clone, Debug, Serialize)]
pub struct RunState {
    pub state: State,
    pub pid: Option<u32>,
    /// Starts after the first.
    pub restarts: u64,
    pub last_exit: Option<String>,
    #[serde(skip)]
    pub since: Instant,
}

impl Default for RunState {
    fn default() -> Self {
        RunState {
            state: State::Starting,
            pid: None,
            restarts: 0,
            last_exit: None,
            since: Instant::now(),
        }
    }
}

/// The next restart delay: `min` after a run of at least `stable`, else twice the last, at
/// most `max`.
#[derive(Debug)]
pub struct Delay {
    next: Duration,
}

impl Delay {
    pub fn new(backoff: &Backoff) -> Self {
        Delay {
            next: backoff.min.0,
        }
    }

    pub fn after_run(&mut self, ran: Duration, backoff: &Backoff) -> Duration {
        if ran >= backoff.stable.0 {
            self.next = backoff.min.0;
        }
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(backoff.max.0);
        delay
    }
}

/// A process's life events, for the bus (controllet joined / left).
#[derive(Clone, Debug)]
pub enum Lifecycle {
    Started { pid: u32, restarts: u64 },
    Ended { exit: String },
}

/// The parts of one supervised process others look at.
#[derive(Clone)]
pub struct Handle {
    pub status: Arc<Mutex<RunState>>,
    pub log: Arc<Mutex<Log>>,
    stop: watch::Sender<bool>,
}

impl Handle {
    pub fn new(log: Arc<Mutex<Log>>) -> (Handle, watch::Receiver<bool>) {
        let (stop, stopped) = watch::channel(false);
        (
            Handle {
                status: Arc::new(Mutex::new(RunState::default())),
                log,
                stop,
            },
            stopped,
        )
    }

    /// Asks the supervisor to stop the process and not restart it.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    pub fn status(&self) -> RunState {
        lock(&self.status).clone()
    }

    pub fn note(&self, line: &str) {
        lock(&self.log).push(&format!("hairpind: {line}"));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the process `launch` starts until `stopped` turns true, restarting it with `backoff`.
/// `terminate(pid)` asks a running process to end; `lifecycle` hears of every start and end.
pub async fn supervise<L, T, F, Fut>(
    handle: Handle,
    mut stopped: watch::Receiver<bool>,
    backoff: Backoff,
    launch: L,
    terminate: T,
    lifecycle: F,
) where
    L: Fn() -> io::Result<Child>,
    T: Fn(u32),
    F: Fn(Lifecycle) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut delay = Delay::new(&backoff);
    let mut first = true;
    while !*stopped.borrow() {
        let started = Instant::now();
        let outcome = match launch() {
            Ok(mut child) => {
                let pid = child.id().unwrap_or(0);
                let restarts = {
                    let mut s = lock(&handle.status);
                    if !first {
                        s.restarts += 1;
                    }
                    s.state = State::Running;
                    s.pid = Some(pid);
                    s.since = started;
                    s.restarts
                };
                first = false;
                handle.note(&format!("started (pid {pid})"));
                lifecycle(Lifecycle::Started { pid, restarts }).await;
                let mut pumps = Vec::new();
                if let Some(out) = child.stdout.take() {
                    pumps.push(tokio::spawn(pump(out, Arc::clone(&handle.log))));
                }
                if let Some(err) = child.stderr.take() {
                    pumps.push(tokio::spawn(pump(err, Arc::clone(&handle.log))));
                }
                let exit = tokio::select! {
                    status = child.wait() => status,
                    _ = stopped.changed() => {
                        terminate(pid);
                        match tokio::time::timeout(GRACE, child.wait()).await {
                            Ok(status) => status,
                            Err(_) => {
                                let _ = child.start_kill();
                                child.wait().await
                            }
                        }
                    }
                };
                // The pipes close with the process; what it wrote last is in the log.
                for pump in pumps {
                    let _ = tokio::time::timeout(Duration::from_millis(200), pump).await;
                }
                let exit = match exit {
                    Ok(status) => crate::process::describe_exit(status),
                    Err(e) => format!("lost: {e}"),
                };
                lifecycle(Lifecycle::Ended { exit: exit.clone() }).await;
                exit
            }
            Err(e) => format!("could not start: {e}"),
        };
        {
            let mut s = lock(&handle.status);
            s.pid = None;
            s.last_exit = Some(outcome.clone());
        }
        if *stopped.borrow() {
            handle.note(&format!("stopped: {outcome}"));
            break;
        }
        let wait = delay.after_run(started.elapsed(), &backoff);
        handle.note(&format!("{outcome}; restart in {} ms", wait.as_millis()));
        lock(&handle.status).state = State::Backoff;
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => {}
        }
    }
    lock(&handle.status).state = State::Stopped;
}

/// Copies lines from a pipe into the log; a line longer than [`MAX_LINE`] is cut there.
async fn pump<R: AsyncRead + Unpin>(mut reader: R, log: Arc<Mutex<Log>>) {
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut skipping = false;
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                if !skipping || !line.is_empty() {
                    lock(&log).push(&String::from_utf8_lossy(&line));
                }
                line.clear();
                skipping = false;
            } else if line.len() < MAX_LINE {
                line.push(b);
            } else if !skipping {
                lock(&log).push(&String::from_utf8_lossy(&line));
                line.clear();
                skipping = true;
            }
        }
    }
    if !line.is_empty() {
        lock(&log).push(&String::from_utf8_lossy(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Period;

    fn backoff(min: u64, max: u64, stable: u64) -> Backoff {
        Backoff {
            min: Period(Duration::from_millis(min)),
            max: Period(Duration::from_millis(max)),
            stable: Period(Duration::from_millis(stable)),
        }
    }

    #[test]
    fn delays_double_up_to_the_cap_and_reset_after_a_stable_run() {
        let b = backoff(100, 1000, 5000);
        let mut d = Delay::new(&b);
        let quick = Duration::from_millis(10);
        let got: Vec<u128> = (0..6).map(|_| d.after_run(quick, &b).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(d.after_run(Duration::from_secs(6), &b).as_millis(), 100);
        assert_eq!(d.after_run(quick, &b).as_millis(), 200);
        // However long the delays, doubling them saturates instead of overflowing.
        let long = Backoff {
            min: Period(Duration::MAX),
            max: Period(Duration::MAX),
            stable: Period(Duration::MAX),
        };
        let mut d = Delay::new(&long);
        assert_eq!(d.after_run(quick, &long), Duration::MAX);
        assert_eq!(d.after_run(quick, &long), Duration::MAX);
    }

    #[tokio::test]
    async fn restarts_a_dying_process_keeps_its_output_and_stops_on_request() {
        let (handle, stopped) = Handle::new(Arc::new(Mutex::new(Log::new(None))));
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        let task = tokio::spawn(supervise(
            handle.clone(),
            stopped,
            backoff(10, 40, 60_000),
            || {
                tokio::process::Command::new("/bin/sh")
                    .args(["-c", "echo out; echo err >&2; exit 3"])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
            },
            |_| {},
            move |event| {
                lock(&seen).push(format!("{event:?}"));
                async {}
            },
        ));
        let deadline = Instant::now() + Duration::from_secs(10);
        while handle.status().restarts < 3 {
            assert!(
                Instant::now() < deadline,
                "no restarts: {:?}",
                handle.status()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        handle.stop();
        task.await.unwrap();
        let status = handle.status();
        assert_eq!(status.state, State::Stopped);
        assert_eq!(status.last_exit.as_deref(), Some("exited with status 3"));
        let log = lock(&handle.log).tail(usize::MAX);
        assert!(log.iter().filter(|l| *l == "out").count() >= 3, "{log:?}");
        assert!(log.iter().any(|l| l == "err"), "{log:?}");
        assert!(
            log.iter().any(|l| l.contains("restart in 20 ms")),
            "{log:?}"
        );
        let events = lock(&events);
        assert!(events.iter().any(|e| e.contains("Ended")), "{events:?}");
    }

    #[tokio::test]
    async fn a_process_that_ignores_its_stop_signal_is_killed_after_the_grace() {
        let (handle, stopped) = Handle::new(Arc::new(Mutex::new(Log::new(None))));
        let task = tokio::spawn(supervise(
            handle.clone(),
            stopped,
            backoff(10, 10, 60_000),
            || {
                tokio::process::Command::new("/bin/sh")
                    .args(["-c", "trap '' TERM; echo ready; exec sleep 60"])
                    .stdout(std::process::Stdio::piped())
                    .spawn()
            },
            |pid| {
                // SAFETY: kill(2) on the pid of the child this test started.
                unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            },
            |_| async {},
        ));
        while lock(&handle.log).tail(1) != ["ready"] {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let asked = Instant::now();
        handle.stop();
        task.await.unwrap();
        assert!(asked.elapsed() >= GRACE, "stopped before the grace ran out");
        assert!(handle.status().last_exit.unwrap().contains("signal 9"));
    }
}
