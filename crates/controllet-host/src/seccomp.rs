//! The system-call filter of a sandboxed controllet: what no control program needs and what
//! widens the kernel's attack surface is refused with EPERM (as Docker's default profile
//! does), everything else is allowed.
//!
//! Refused: new namespaces and mounts (`unshare`, `setns`, `clone` with a namespace flag, the
//! mount calls), loading code or changing the machine (modules, `kexec`, `reboot`, swap,
//! clocks, `acct`, `syslog`, quotas, I/O ports), reaching into other processes or the kernel
//! (`ptrace`, `process_vm_*`, `kcmp`, `bpf`, `perf_event_open`, `userfaultfd`, the key
//! calls, `open_by_handle_at`) and `io_uring`. `clone3` gets ENOSYS instead, so that the C
//! library falls back to `clone`, whose flags the filter can read (`clone3` passes them in
//! memory).
//!
//! bubblewrap loads the filters (`--add-seccomp-fd`) just before it executes the controllet,
//! after its own namespace and mount work, which the filter would refuse. A controllet that
//! needs one of these calls names it in `allow_syscalls`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The calls refused with EPERM, by name (the names `allow_syscalls` accepts).
pub const REFUSED: &[(&str, libc::c_long)] = &[
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    ("syslog", libc::SYS_syslog),
    ("quotactl", libc::SYS_quotactl),
    ("vhangup", libc::SYS_vhangup),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("kcmp", libc::SYS_kcmp),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    // Refused only with a namespace flag (below); listed so that it can be allowed.
    ("clone", libc::SYS_clone),
];

/// `clone` flags that make a namespace.
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// Whether `name` is a call the filter refuses (and so one `allow_syscalls` may name).
pub fn refuses(name: &str) -> bool {
    REFUSED.iter().any(|(n, _)| *n == name) || name == "clone3"
}

/// The two filters as bubblewrap reads them (`--add-seccomp-fd`): the EPERM list without the
/// calls in `allowed`, then `clone3`'s ENOSYS (unless allowed).
pub fn programs(allowed: &[String]) -> io::Result<Vec<BpfProgram>> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(invalid)?;
    let kept = |name: &str| !allowed.iter().any(|a| a == name);
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &(_, nr) in REFUSED.iter().filter(|(n, _)| kept(n)) {
        let rules = if nr == libc::SYS_clone {
            NAMESPACE_FLAGS
                .iter()
                .map(|&flag| {
                    let flag = flag as u64;
                    let cond = SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(flag),
                        flag,
                    )
                    .map_err(invalid)?;
                    SeccompRule::new(vec![cond]).map_err(invalid)
                })
                .collect::<io::Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        refused.insert(nr, rules);
    }
    let mut out = vec![compile(refused, libc::EPERM, arch)?];
    if kept("clone3") {
        out.push(compile(
            BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
            libc::ENOSYS,
            arch,
        )?);
    }
    Ok(out)
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: libc::c_int,
    arch: TargetArch,
) -> io::Result<BpfProgram> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(invalid)?;
    filter.try_into().map_err(invalid)
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("seccomp filter: {e}"))
}

/// A compiled filter in an anonymous file, closed on exec: the child rewinds it and clears
/// its close-on-exec flag just before running bubblewrap ([`prepare_for_exec`]), so that no
/// other child inherits it and every restart reads it whole.
#[derive(Debug)]
pub struct FilterFile(File);

impl FilterFile {
    pub fn new(program: &BpfProgram) -> io::Result<FilterFile> {
        // SAFETY: the name is a NUL-terminated string; the call returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(c"controllet-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let mut file = unsafe { File::from_raw_fd(fd) };
        let bytes: Vec<u8> = program
            .iter()
            .flat_map(|i| {
                let mut b = [0u8; 8];
                b[..2].copy_from_slice(&i.code.to_ne_bytes());
                b[2] = i.jt;
                b[3] = i.jf;
                b[4..].copy_from_slice(&i.k.to_ne_bytes());
                b
            })
            .collect();
        file.write_all(&bytes)?;
        file.rewind()?;
        Ok(FilterFile(file))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// In the forked child: rewinds `fd` and lets it survive the exec. Only async-signal-safe
/// calls (lseek, fcntl).
pub fn prepare_for_exec(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on a descriptor the child inherited.
    let rc = unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Loads `programs` into the calling thread (with no_new_privs), as bubblewrap does for the
/// controllet: for the tests and the benchmark, which measure the filter without a sandbox.
pub fn install(programs: &[BpfProgram]) -> io::Result<()> {
    for p in programs {
        seccompiler::apply_filter(p).map_err(invalid)?;
    }
    Ok(())
}

/// Whether this kernel filters system calls (`prctl(PR_GET_SECCOMP)` answers).
pub fn available() -> Result<(), String> {
    // SAFETY: a query without side effects.
    let rc = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if rc < 0 {
        return Err(format!(
            "the kernel filters no system calls ({})",
            io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Installs the filters in a forked child and reports, for each probe, the errno the
    /// call ended with (0 for success).
    fn in_filtered_child(allowed: &[String], probes: &[fn() -> libc::c_long]) -> Vec<i32> {
        let programs = programs(allowed).expect("the filters compile");
        let mut pipe = [0; 2];
        // SAFETY: `pipe` has room for two descriptors.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: the child only makes system calls and exits; it allocates nothing.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: in the child: the filters (built before the fork), the probes, exit.
            unsafe {
                if install(&programs).is_err() {
                    libc::_exit(99);
                }
                for probe in probes {
                    let errno = if probe() < 0 {
                        *libc::__errno_location()
                    } else {
                        0
                    };
                    libc::write(pipe[1], (&errno as *const i32).cast(), 4);
                }
                libc::_exit(0);
            }
        }
        // SAFETY: the parent's ends of the pipe and the child's pid.
        unsafe {
            libc::close(pipe[1]);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            assert_eq!(libc::WEXITSTATUS(status), 0, "the child ran its probes");
            let mut out = vec![0i32; probes.len()];
            let n = libc::read(pipe[0], out.as_mut_ptr().cast(), 4 * probes.len());
            libc::close(pipe[0]);
            assert_eq!(n as usize, 4 * probes.len());
            out
        }
    }

    fn new_user_ns() -> libc::c_long {
        // SAFETY: a child process makes the call and exits.
        unsafe { libc::unshare(libc::CLONE_NEWUSER).into() }
    }

    fn key_id() -> libc::c_long {
        // KEYCTL_GET_KEYRING_ID of the session keyring, not created.
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_keyctl, 0, -3, 0) }
    }

    fn clone3() -> libc::c_long {
        // SAFETY: a null argument block: the kernel answers EFAULT or EINVAL, or the filter.
        unsafe { libc::syscall(libc::SYS_clone3, 0, 0) }
    }

    fn getpid() -> libc::c_long {
        // SAFETY: as above.
        unsafe { libc::getpid().into() }
    }

    fn fork_and_reap() -> libc::c_long {
        // SAFETY: the grandchild exits at once; the child waits for it.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(0);
            }
            if pid > 0 {
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            pid.into()
        }
    }

    #[test]
    fn refused_calls_fail_with_eperm_and_the_rest_work() {
        let got = in_filtered_child(&[], &[new_user_ns, key_id, clone3, getpid, fork_and_reap]);
        assert_eq!(got, [libc::EPERM, libc::EPERM, libc::ENOSYS, 0, 0]);
    }

    #[test]
    fn an_allowed_call_is_no_longer_refused() {
        let got = in_filtered_child(&["keyctl".into()], &[key_id, new_user_ns]);
        assert_ne!(got[0], libc::EPERM, "keyctl allowed");
        assert_eq!(got[1], libc::EPERM);
    }

    #[test]
    fn the_file_holds_the_program_and_rewinds() {
        let programs = programs(&[]).expect("the filters compile");
        let file = FilterFile::new(&programs[0]).expect("memfd");
        let len = std::fs::metadata(format!("/proc/self/fd/{}", file.fd()))
            .expect("the file")
            .len();
        assert_eq!(len as usize, programs[0].len() * 8);
        prepare_for_exec(file.fd()).expect("rewind");
        assert!(refuses("ptrace") && refuses("clone3") && !refuses("read"));
    }
}
