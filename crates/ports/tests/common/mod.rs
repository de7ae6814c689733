//! Test fixtures: a private network namespace per test, entered by the test thread,
//! deleted on drop even when the test fails.

#![allow(dead_code)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Whether the tests can create namespaces; prints why a test is skipped if not.
pub fn is_root(test: &str) -> bool {
    testkit::root(test)
}

/// A uniquely named network namespace that the current thread has entered.
pub struct Netns {
    pub name: String,
    original: File,
}

fn run(cmd: &str, args: &[&str]) {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn setns(file: &File) {
    // SAFETY: the fd is a namespace file; setns only changes this thread's namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
}

impl Netns {
    /// Creates the namespace, turns IPv6 off in it (no stray router solicitations or
    /// MLD reports), and moves the calling thread into it.
    pub fn enter() -> Self {
        let name = format!(
            "hpt-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let original = File::open("/proc/thread-self/ns/net").expect("open own netns");
        run("ip", &["netns", "add", &name]);
        let ns = Netns { name, original };
        ns.sysctl("net.ipv6.conf.default.disable_ipv6=1");
        ns.sysctl("net.ipv6.conf.all.disable_ipv6=1");
        let file = File::open(format!("/run/netns/{}", ns.name)).expect("open new netns");
        setns(&file);
        ns
    }

    /// `ip -n <ns> args...`, panicking on failure.
    pub fn ip(&self, args: &[&str]) {
        let mut full = vec!["-n", &self.name];
        full.extend_from_slice(args);
        run("ip", &full);
    }

    /// Runs a command inside the namespace and returns whether it succeeded.
    pub fn exec_status(&self, args: &[&str]) -> bool {
        let mut full = vec!["netns", "exec", &self.name];
        full.extend_from_slice(args);
        Command::new("ip")
            .args(&full)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    }

    pub fn sysctl(&self, setting: &str) {
        run(
            "ip",
            &["netns", "exec", &self.name, "sysctl", "-q", "-w", setting],
        );
    }

    /// A veth pair, both ends up with IPv6 disabled.
    pub fn veth(&self, a: &str, b: &str) {
        self.ip(&["link", "add", a, "type", "veth", "peer", "name", b]);
        for end in [a, b] {
            self.sysctl(&format!("net.ipv6.conf.{end}.disable_ipv6=1"));
            self.ip(&["link", "set", "dev", end, "up"]);
        }
    }
}

/// A second namespace standing for a host, deleted on drop; the thread stays out.
pub struct HostNs {
    pub name: String,
}

impl HostNs {
    pub fn exec(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).args(args);
        cmd
    }
}

/// What a TCP transfer's two ends reported: each prints the byte count and SHA-256 of what
/// it sent or received, so equal lines mean the bytes arrived intact.
pub struct TcpTransfer {
    pub sent: String,
    pub received: String,
}

/// Sends 20 MiB of kernel TCP from `client` to a server listening on `server_ip`:5001 in
/// `server` (whatever forwards between them must already run), and returns both reports.
pub fn tcp_transfer(client: &HostNs, server: &HostNs, server_ip: &str) -> TcpTransfer {
    let server_script = format!(
        r#"
import socket, hashlib
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{server_ip}", 5001)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20)
h = hashlib.sha256(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b); n += len(b)
print(n, h.hexdigest(), flush=True)
"#
    );
    let client_script = format!(
        r#"
import socket, hashlib
data = hashlib.sha256(b"hairpin").digest() * (20 * 1024 * 1024 // 32)
c = socket.create_connection(("{server_ip}", 5001), timeout=20)
c.sendall(data); c.close()
print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
"#
    );
    let mut listener = server
        .exec(&["python3", "-c", &server_script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the TCP server");
    std::thread::sleep(Duration::from_millis(300));
    let sender = client
        .exec(&["python3", "-c", &client_script])
        .output()
        .expect("run the TCP client");
    let status = listener.wait().expect("TCP server exit");
    let mut received = String::new();
    if let Some(stdout) = listener.stdout.as_mut() {
        std::io::Read::read_to_string(stdout, &mut received).expect("TCP server output");
    }
    assert!(status.success(), "TCP server failed: {received}");
    assert!(
        sender.status.success(),
        "TCP client failed: {}",
        String::from_utf8_lossy(&sender.stderr)
    );
    TcpTransfer {
        sent: String::from_utf8_lossy(&sender.stdout).trim().to_string(),
        received: received.trim().to_string(),
    }
}

impl Drop for HostNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

impl Netns {
    /// A host namespace linked to this one by a veth pair: `port` here (up, IPv6
    /// off) and `eth0` there, with `addr` (CIDR) on it.
    pub fn host(&self, suffix: &str, port: &str, addr: &str) -> HostNs {
        let host = HostNs {
            name: format!("{}-{suffix}", self.name),
        };
        run("ip", &["netns", "add", &host.name]);
        run(
            "ip",
            &[
                "netns",
                "exec",
                &host.name,
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
        );
        run(
            "ip",
            &[
                "netns",
                "exec",
                &host.name,
                "sysctl",
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
            ],
        );
        self.ip(&[
            "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", &host.name,
        ]);
        self.sysctl(&format!("net.ipv6.conf.{port}.disable_ipv6=1"));
        self.ip(&["link", "set", "dev", port, "up"]);
        run(
            "ip",
            &["-n", &host.name, "addr", "add", addr, "dev", "eth0"],
        );
        run(
            "ip",
            &["-n", &host.name, "link", "set", "dev", "eth0", "up"],
        );
        run("ip", &["-n", &host.name, "link", "set", "dev", "lo", "up"]);
        host
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        setns(&self.original);
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// A test frame: unicast between two local MACs, experimental EtherType 0x88b5,
/// `len` bytes whose payload starts with `seq`.
pub fn test_frame(seq: u32, len: usize) -> Vec<u8> {
    let mut frame = vec![0u8; len.max(60)];
    frame[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    frame[14..18].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in frame.iter_mut().enumerate().skip(18) {
        *b = (i as u32).wrapping_add(seq) as u8;
    }
    frame
}

/// Inserts an outer VLAN tag after the MACs.
pub fn tagged(frame: &[u8], tpid: u16, tci: u16) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    out.extend_from_slice(&tpid.to_be_bytes());
    out.extend_from_slice(&tci.to_be_bytes());
    out.extend_from_slice(&frame[12..]);
    out
}

/// Polls `step` until it returns true or `timeout` passes; returns the last answer.
pub fn wait_until(timeout: Duration, mut step: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if step() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
