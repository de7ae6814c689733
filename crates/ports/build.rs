//! Compiles the AF_XDP redirect program (bpf/xsk_redirect.c) with clang into OUT_DIR.
//!
//! Without a working clang the build still succeeds: an empty object and the reason are
//! written instead, and `XdpPort::open` reports AF_XDP as unavailable (ports fall back
//! to AF_PACKET). Set `CLANG` to choose the compiler.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = "bpf/xsk_redirect.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let object = out_dir.join("xsk_redirect.o");
    let reason_file = out_dir.join("xsk_redirect.unavailable");
    let reason = match compile(&object) {
        Ok(()) => String::new(),
        Err(reason) => {
            println!("cargo:warning=AF_XDP disabled: {reason}");
            fs::write(&object, b"").expect("write empty BPF object");
            reason
        }
    };
    fs::write(&reason_file, reason).expect("write BPF build status");
}

fn compile(object: &Path) -> Result<(), String> {
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
    let mut cmd = Command::new(&clang);
    cmd.args(["-target", "bpf", "-O2", "-g", "-Wall", "-c", SOURCE, "-o"])
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
            "{clang} failed on {SOURCE}: {}",
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
