//! Starting a controllet's process: from the daemon (root) to the controllet's unprivileged
//! user, inside its cgroups and network namespace before its first instruction.
//!
//! Between fork and exec the child, still root, writes its pid into its cgroups' `cgroup.procs`
//! (so every later fork is counted), joins its network namespace, asks to be killed when the
//! daemon dies, and drops to the controllet's user and group (no supplementary groups). Then
//! it runs bubblewrap (see `sandbox`) or, without a sandbox, the program itself in a session
//! of its own.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::Stdio;

use cpus::CpuSet;
use tokio::process::{Child, Command};

/// The unprivileged user a controllet runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
}

impl User {
    /// Looks `name` up (a user name, or a number used as uid and gid). Root is refused: a
    /// controllet never runs with the daemon's privileges.
    pub fn resolve(name: &str) -> Result<User, String> {
        let user = match name.parse::<u32>() {
            Ok(uid) => User { uid, gid: uid },
            Err(_) => lookup(name).ok_or_else(|| format!("no user `{name}` on this host"))?,
        };
        if user.uid == 0 || user.gid == 0 {
            return Err(format!(
                "`{name}` is root: a controllet runs as an unprivileged user"
            ));
        }
        Ok(user)
    }
}

fn lookup(name: &str) -> Option<User> {
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: passwd is plain old data; getpwnam_r fills it with pointers into `buf`.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and `buf.len()` is its real length.
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    (rc == 0 && !result.is_null()).then_some(User {
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
    })
}

/// Everything one start of a controllet's process needs.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The program and its arguments (bubblewrap's, when sandboxed).
    pub argv: Vec<OsString>,
    pub env: Vec<(String, String)>,
    pub directory: PathBuf,
    pub user: User,
    /// `cgroup.procs` descriptors to enter.
    pub cgroup_fds: Vec<RawFd>,
    /// A network namespace to join.
    pub netns_fd: Option<RawFd>,
    /// Close-on-exec descriptors the program reads from the start (the sandbox's system-call
    /// filters): rewound and passed on.
    pub inherit_fds: Vec<RawFd>,
    /// The CPUs it runs on (`cpu_affinity`), applied before the program starts.
    pub affinity: Option<CpuSet>,
}

/// Starts the process with stdout and stderr piped; it is killed if the handle is dropped.
pub fn spawn(launch: &Launch) -> io::Result<Child> {
    let (program, args) = launch
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&launch.directory)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let cgroup_fds = launch.cgroup_fds.clone();
    let netns = launch.netns_fd;
    let inherit = launch.inherit_fds.clone();
    let user = launch.user;
    let affinity = launch.affinity;
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (write, setns, prctl, setsid, setgroups, setgid,
    // setuid, sched_setaffinity, lseek, fcntl); it allocates nothing (the descriptor lists
    // were cloned and the CPU set built before the fork).
    unsafe {
        command.pre_exec(move || {
            crate::cgroup::enter(&cgroup_fds)?;
            if let Some(fd) = netns {
                crate::netns::enter(fd)?;
            }
            if let Some(set) = &affinity {
                set.apply_to_this_process()?;
            }
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
            // A session of its own, so that the whole process group can be signalled.
            check(libc::setsid())?;
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setgid(user.gid))?;
            check(libc::setuid(user.uid))?;
            for &fd in &inherit {
                crate::seccomp::prepare_for_exec(fd)?;
            }
            Ok(())
        });
    }
    command.spawn()
}

fn check(rc: i32) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// How a process ended, as an operator reads it.
pub fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        // bubblewrap reports a sandboxed program killed by signal N as 128 + N.
        (Some(code), _) if code > 128 && code < 128 + 65 => {
            format!("exited with status {code} (signal {} inside)", code - 128)
        }
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_resolve_and_root_is_refused() {
        assert_eq!(User::resolve("nobody").map(|u| u.uid), Ok(65534));
        assert_eq!(
            User::resolve("4242"),
            Ok(User {
                uid: 4242,
                gid: 4242
            })
        );
        assert!(User::resolve("root").unwrap_err().contains("root"));
        assert!(User::resolve("0").is_err());
        assert!(User::resolve("no-such-user-here")
            .unwrap_err()
            .contains("no user"));
    }
}
