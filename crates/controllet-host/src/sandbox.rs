//! The bubblewrap command line that confines a controllet: its own user, pid, ipc and uts
//! namespaces (and cgroup namespace where the kernel has one), no capabilities, and a mount
//! namespace that shows the system read-only (`/usr`, `/etc` and the library links), a fresh
//! `/proc`, `/dev` and `/tmp`, the controllet's private directory read-write, the operator's
//! `read_only` paths, and at `/run/hairpin` the directory with its OpenFlow socket. Nothing
//! else of the host's files is there: not other controllets' directories, not hairpind's
//! state, not `/home` or `/root`.
//!
//! bwrap runs as the controllet's unprivileged user (the host drops root before exec), so it
//! needs unprivileged user namespaces; the network namespace is chosen by the host before
//! bwrap starts (see `netns`), never by bwrap.

use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

/// Where the controllet finds its OpenFlow socket inside the sandbox.
pub const CHANNEL_DIR: &str = "/run/hairpin";

/// What the sandbox shows and runs.
#[derive(Clone, Debug)]
pub struct Plan {
    pub bwrap: PathBuf,
    pub name: String,
    /// The controllet's private directory (same path inside), its working directory.
    pub directory: PathBuf,
    /// The host directory holding its OpenFlow socket, shown at [`CHANNEL_DIR`].
    pub channel_dir: PathBuf,
    pub read_only: Vec<PathBuf>,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Descriptors of the system-call filters bubblewrap loads before the program.
    pub seccomp_fds: Vec<RawFd>,
}

/// System paths shown read-only; each is bound when it is a directory and recreated as the
/// same link when it is a symbolic link (merged-/usr systems).
const SYSTEM: &[&str] = &[
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

impl Plan {
    /// bwrap's argument vector, program and arguments last. `root` is where the system paths
    /// are looked up (`/` outside tests).
    pub fn argv(&self, root: &Path) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let mut push = |items: &[&dyn AsRef<std::ffi::OsStr>]| {
            a.extend(items.iter().map(|i| i.as_ref().to_os_string()));
        };
        push(&[&self.bwrap]);
        push(&[
            &"--unshare-user",
            &"--unshare-pid",
            &"--unshare-ipc",
            &"--unshare-uts",
            &"--unshare-cgroup-try",
            &"--die-with-parent",
            &"--new-session",
            &"--cap-drop",
            &"ALL",
            &"--hostname",
        ]);
        let hostname = format!("controllet-{}", self.name);
        push(&[&hostname]);
        for path in SYSTEM {
            let host = root.join(path.trim_start_matches('/'));
            match std::fs::symlink_metadata(&host) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(&host) {
                        push(&[&"--symlink", &target, path]);
                    }
                }
                Ok(m) if m.is_dir() => push(&[&"--ro-bind", &host, path]),
                _ => {}
            }
        }
        push(&[&"--proc", &"/proc", &"--dev", &"/dev", &"--tmpfs", &"/tmp"]);
        push(&[
            &"--tmpfs",
            &"/run",
            &"--bind",
            &self.channel_dir,
            &CHANNEL_DIR,
        ]);
        for path in &self.read_only {
            push(&[&"--ro-bind", path, path]);
        }
        push(&[&"--bind", &self.directory, &self.directory]);
        for fd in &self.seccomp_fds {
            push(&[&"--add-seccomp-fd", &fd.to_string()]);
        }
        push(&[&"--chdir", &self.directory, &"--", &self.program]);
        a.extend(self.args.iter().map(OsString::from));
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            bwrap: "/usr/bin/bwrap".into(),
            name: "lsw".into(),
            directory: "/var/lib/hairpin/dp-1/controllets/lsw".into(),
            channel_dir: "/run/hairpin/dp-1/controllets/lsw".into(),
            read_only: vec!["/opt/lsw".into()],
            program: "/opt/lsw/bin/lsw".into(),
            args: vec!["--verbose".into()],
            seccomp_fds: vec![7, 8],
        }
    }

    fn pairs(argv: &[OsString]) -> Vec<String> {
        argv.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn shows_the_system_read_only_and_only_its_own_directory_writable() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("usr/bin")).unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::os::unix::fs::symlink("usr/bin", root.path().join("bin")).unwrap();
        let argv = pairs(&plan().argv(root.path()));
        let joined = argv.join(" ");
        for wanted in [
            "--unshare-user --unshare-pid --unshare-ipc --unshare-uts",
            "--cap-drop ALL",
            "--die-with-parent",
            "--symlink usr/bin /bin",
            "--proc /proc --dev /dev --tmpfs /tmp",
            "--bind /run/hairpin/dp-1/controllets/lsw /run/hairpin",
            "--ro-bind /opt/lsw /opt/lsw",
            "--bind /var/lib/hairpin/dp-1/controllets/lsw /var/lib/hairpin/dp-1/controllets/lsw",
            "--add-seccomp-fd 7 --add-seccomp-fd 8",
            "-- /opt/lsw/bin/lsw --verbose",
        ] {
            assert!(joined.contains(wanted), "{wanted} missing in {joined}");
        }
        let usr = root.path().join("usr").display().to_string();
        assert!(
            joined.contains(&format!("--ro-bind {usr} /usr")),
            "{joined}"
        );
        // Writable binds: only the channel and the private directory.
        let writable: Vec<_> = argv
            .windows(2)
            .filter(|w| w[0] == "--bind")
            .map(|w| w[1].clone())
            .collect();
        assert_eq!(writable.len(), 2, "{writable:?}");
        // Nothing of the host is bound unless listed: no /home, /root, /var, /run as a whole.
        for hidden in [" /home", " /root", "--bind /var ", "--ro-bind /run "] {
            assert!(!joined.contains(hidden), "{hidden} in {joined}");
        }
        assert!(
            !argv.iter().any(|a| a == "--unshare-net"),
            "the host picks the netns"
        );
    }
}
