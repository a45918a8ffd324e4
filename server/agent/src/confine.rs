//! The seccomp filter the agent installs on every process it starts (`--confine-children`).
//!
//! Under an OCI runtime the sandbox's own filter (`server/src/control/oci/bundle.rs`)
//! is Docker's default list for a container without CAP_SYS_ADMIN *minus* the four
//! calls isolated sessions need to build their namespaces: `mount`, `umount2`,
//! `pivot_root` and `unshare`. That filter binds the agent. The agent adds this one,
//! which refuses exactly those four, to the entrypoint, commands, bash sessions, code
//! contexts and the shells of isolated sessions; filters stack and the strictest
//! answer wins, so every process of the sandbox but the agent and its isolated-session
//! launcher keeps Docker's full list. `server/tests/isolation.rs` proves it for each
//! kind of process (remount, mount, unshare refused; `Seccomp_filters: 2`).
//!
//! The filter is classic BPF built once (no libseccomp): it checks the architecture
//! (x86-64 with its x32 numbers and i386, or aarch64 and 32-bit ARM) and answers
//! EPERM for the listed numbers; anything else, including an unknown architecture, is
//! left to the outer filter.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turn child confinement on (at start-up, from `--confine-children`).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether processes started by this agent get [`filter`].
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

// Classic BPF opcodes (linux/bpf_common.h) and seccomp return values.
const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
/// `struct seccomp_data`: `nr` at 0, `arch` at 4.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const AUDIT_ARCH_AARCH64: u32 = 0xc000_00b7;
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;

/// The refused calls per architecture: `mount`, `umount2`, `pivot_root`, `unshare`
/// (and the old one-argument `umount` where the architecture has it). Numbers from
/// the kernel's syscall tables (`arch/*/entry/syscalls`, `include/uapi/asm-generic`).
const X86_64: &[u32] = &[165, 166, 155, 272];
const I386: &[u32] = &[21, 52, 22, 217, 310];
const AARCH64: &[u32] = &[40, 39, 41, 97];
const ARM: &[u32] = &[21, 52, 218, 337];

#[derive(Clone, Copy)]
enum Op {
    Load(u32),
    /// Jump to the deny instruction when the accumulator equals the value.
    DenyIf(u32),
    /// Skip to the next architecture block unless the accumulator equals the value.
    ArchIs(u32, usize),
    Allow,
    Deny,
}

/// The assembled program: `sock_filter` entries, ready for `SECCOMP_SET_MODE_FILTER`.
pub struct Filter {
    program: Vec<libc::sock_filter>,
}

fn assemble(ops: &[Op]) -> Vec<libc::sock_filter> {
    let deny = ops
        .iter()
        .position(|op| matches!(op, Op::Deny))
        .unwrap_or(ops.len());
    ops.iter()
        .enumerate()
        .map(|(i, op)| {
            let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
            // Jumps are relative to the next instruction and always forward here.
            let to = |target: usize| u8::try_from(target.saturating_sub(i + 1)).unwrap_or(0);
            match *op {
                Op::Load(offset) => insn(LD_W_ABS, 0, 0, offset),
                Op::DenyIf(nr) => insn(JEQ_K, to(deny), 0, nr),
                Op::ArchIs(arch, next) => insn(JEQ_K, 0, to(next), arch),
                Op::Allow => insn(RET_K, 0, 0, SECCOMP_RET_ALLOW),
                Op::Deny => insn(RET_K, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
            }
        })
        .collect()
}

fn build() -> Filter {
    let blocks: &[(u32, &[u32], bool)] = if cfg!(target_arch = "aarch64") {
        &[
            (AUDIT_ARCH_AARCH64, AARCH64, false),
            (AUDIT_ARCH_ARM, ARM, false),
        ]
    } else {
        &[
            (AUDIT_ARCH_X86_64, X86_64, true),
            (AUDIT_ARCH_I386, I386, false),
        ]
    };
    let mut ops = vec![Op::Load(OFFSET_ARCH)];
    for (arch, numbers, x32) in blocks {
        // Block: arch check (else on to the next block's, the arch still loaded),
        // load nr, one test per number (twice with x32), allow.
        let tests = numbers.len() * if *x32 { 2 } else { 1 };
        let next = ops.len() + 2 + tests + 1;
        ops.push(Op::ArchIs(*arch, next));
        ops.push(Op::Load(OFFSET_NR));
        for nr in *numbers {
            ops.push(Op::DenyIf(*nr));
            if *x32 {
                ops.push(Op::DenyIf(nr | X32_SYSCALL_BIT));
            }
        }
        ops.push(Op::Allow);
    }
    ops.push(Op::Allow);
    ops.push(Op::Deny);
    Filter {
        program: assemble(&ops),
    }
}

/// The filter, built on first use.
pub fn filter() -> Arc<Filter> {
    static FILTER: OnceLock<Arc<Filter>> = OnceLock::new();
    Arc::clone(FILTER.get_or_init(|| Arc::new(build())))
}

impl Filter {
    /// Installs the filter on the calling thread (and so on everything it execs).
    /// Only raw syscalls on memory built beforehand: safe between fork and exec.
    pub fn install(&self) -> io::Result<()> {
        let prog = libc::sock_fprog {
            len: u16::try_from(self.program.len()).unwrap_or(u16::MAX),
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `prog` points at `self.program`, alive for the call; the kernel
        // copies the program.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Has `command` install the filter in the child before it execs, when child
/// confinement is on. Every spawn site of the agent calls this, except the
/// isolated-session launcher (which installs it itself once its mounts are made).
pub fn apply(command: &mut tokio::process::Command) {
    if !enabled() {
        return;
    }
    let filter = filter();
    // SAFETY: the closure runs between fork and exec; `install` makes two raw
    // syscalls on a program assembled before the fork (no allocation, no lock).
    unsafe {
        command.pre_exec(move || filter.install());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_jump_lands_inside_the_program() {
        let f = build();
        let n = f.program.len();
        for (i, insn) in f.program.iter().enumerate() {
            if insn.code == JEQ_K {
                assert!(i + 1 + usize::from(insn.jt) < n, "jt of {i}");
                assert!(i + 1 + usize::from(insn.jf) < n, "jf of {i}");
            }
        }
        assert_eq!(f.program[n - 1].k, SECCOMP_RET_ERRNO | libc::EPERM as u32);
    }

    #[test]
    fn a_confined_child_cannot_unshare_or_mount() {
        // A forked child installs the filter and tries; the parent reads the errnos.
        let filter = filter();
        let mut cmd = std::process::Command::new("sh");
        cmd.args([
            "-c",
            "unshare -U true 2>/dev/null && echo ALLOWED || echo refused",
        ]);
        use std::os::unix::process::CommandExt;
        // SAFETY: as in `apply`.
        unsafe {
            cmd.pre_exec(move || filter.install());
        }
        let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        if !std::path::Path::new("/usr/bin/unshare").exists() {
            eprintln!("SKIPPED: no unshare(1) here");
            return;
        }
        assert_eq!(text.trim(), "refused", "{text}");
    }
}
