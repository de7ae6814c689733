//! Compiles the XDP programs (bpf/xsk_redirect.c for AF_XDP ports, bpf/offload.c for the
//! offload fast path) with clang into OUT_DIR.
//!
//! Without a working clang the build still succeeds: an empty object and the reason are
//! written instead, and loading reports the program as unavailable (AF_XDP ports fall back
//! to AF_PACKET; the offload fast path refuses to start). Set `CLANG` to choose the compiler.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each program: its source and the name of its object in OUT_DIR.
const PROGRAMS: [(&str, &str); 2] = [
    ("bpf/xsk_redirect.c", "xsk_redirect"),
    ("bpf/offload.c", "offload"),
];

fn main() {
    println!("cargo:rerun-if-env-changed=CLANG");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for (source, name) in PROGRAMS {
        println!("cargo:rerun-if-changed={source}");
        let object = out_dir.join(format!("{name}.o"));
        let reason_file = out_dir.join(format!("{name}.unavailable"));
        let reason = match compile(source, &object) {
            Ok(()) => String::new(),
            Err(reason) => {
                println!("cargo:warning={name} XDP program disabled: {reason}");
                fs::write(&object, b"").expect("write empty BPF object");
                reason
            }
        };
        fs::write(&reason_file, reason).expect("write BPF build status");
    }
}

fn compile(source: &str, object: &Path) -> Result<(), String> {
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
    let mut cmd = Command::new(&clang);
    cmd.args(["-target", "bpf", "-O2", "-g", "-Wall", "-c", source, "-o"])
        .arg(object);
    // <linux/bpf.h> includes <asm/types.h>, which Debian keeps in the multiarch directory.
    if let Some(multiarch) = multiarch_include() {
        cmd.arg(format!("-I{multiarch}"));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("could not run {clang}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{clang} failed on {source}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn multiarch_include() -> Option<String> {
    let arch = env::var("CARGO_CFG_TARGET_ARCH").ok()?;
    let triple = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        "riscv64" => "riscv64-linux-gnu",
        _ => return None,
    };
    let dir = format!("/usr/include/{triple}");
    Path::new(&dir).is_dir().then_some(dir)
}
