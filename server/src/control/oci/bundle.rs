//! The OCI runtime bundle of a sandbox: `config.json` (checked against `oci-spec`'s
//! `Spec` before it is written) next to the rootfs the runtime starts.
//!
//! What it asks of the runtime, following Docker's defaults:
//! - user namespace: root inside is [`super::ID_BASE`] on the host, with a full
//!   [`super::ID_RANGE`]-id range so `chown` to any user of the image works;
//! - own PID, mount, IPC, UTS, network (loopback only) and cgroup namespaces;
//! - Docker's default capability set without `CAP_NET_RAW` (as Podman does: no raw
//!   or packet sockets; `CapEff 00000000a80405fb` for root), nothing inheritable or
//!   ambient, `noNewPrivileges`;
//! - Docker's masked and read-only `/proc` and `/sys` paths; `/sys` read-only;
//! - `nosuid,nodev` on every writable mount (the rootfs is mounted so by the server);
//! - a seccomp filter refusing the syscalls Docker's default profile refuses to a
//!   container without CAP_SYS_ADMIN (keyrings, bpf, namespaces' setns, modules,
//!   kexec, clock, swap, reboot...) with EPERM, except the four isolated sessions
//!   need ([`AGENT_ONLY_SYSCALLS`]: the agent builds nested namespaces with them).
//!   The agent (`--confine-children`) refuses those four again to every process it
//!   starts, so for everything but the agent and its session launcher the two
//!   filters together are Docker's list (`server/agent/src/confine.rs`);
//! - the image's root filesystem once more, read-only and without the mounts on top
//!   of it, at `/.opensandbox/rootfs`: the lower layer of an isolated session's
//!   overlay on `/` or on a directory holding mounts (overlayfs refuses a lower
//!   directory with mounts below it inside a nested user namespace);
//! - cgroup limits from `resourceLimits` (see `cgroups`);
//! - the agent (this server's binary) read-only at `/.opensandbox/`, with the host's
//!   dynamic loader and libraries it needs, so it runs in any image.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::{ID_BASE, ID_RANGE};

pub const AGENT_DIR_INSIDE: &str = "/.opensandbox";
pub const AGENT_EXE_INSIDE: &str = "/.opensandbox/opensandbox-server";
pub const AGENT_LIB_INSIDE: &str = "/.opensandbox/lib";

/// Docker's default capabilities (moby `oci/caps/defaults.go`) less `CAP_NET_RAW`:
/// a sandbox has only loopback, so raw sockets serve nothing but packet forging and
/// kernel attack surface (Podman leaves it out too).
pub const DEFAULT_CAPS: [&str; 13] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
];

/// Docker's default masked paths.
const MASKED_PATHS: [&str; 12] = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    "/sys/kernel/security",
];

/// Docker's default read-only paths.
const READONLY_PATHS: [&str; 5] = [
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

/// Syscalls refused with EPERM (what Docker's default profile denies a container
/// without CAP_SYS_ADMIN and friends), less [`AGENT_ONLY_SYSCALLS`].
const DENIED_SYSCALLS: [&str; 32] = [
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "delete_module",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "move_mount",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "quotactl",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "userfaultfd",
    "vhangup",
];

/// Docker's profile refuses these too, and so does the sandbox, but through the
/// agent's own filter on each process it starts: the agent needs them to build an
/// isolated session's namespaces (its launcher mounts in a new user namespace;
/// its file threads `unshare(CLONE_FS)` to enter a session's root). Still without
/// CAP_SYS_ADMIN in the sandbox's user namespace, the agent can mount only inside
/// user namespaces it creates.
pub const AGENT_ONLY_SYSCALLS: [&str; 4] = ["mount", "umount2", "pivot_root", "unshare"];

/// Where the image's root filesystem is bound, read-only, without submounts.
pub const ROOTFS_VIEW_INSIDE: &str = "/.opensandbox/rootfs";

/// A bind mount into the sandbox.
#[derive(Debug, Clone)]
pub struct Bind {
    pub source: PathBuf,
    pub destination: String,
    pub read_only: bool,
}

/// Everything a sandbox's config.json depends on.
pub struct BundleSpec<'a> {
    pub rootfs: &'a Path,
    pub hostname: String,
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub cwd: String,
    pub binds: Vec<Bind>,
    pub resources: Value,
    pub cgroups_path: String,
}

fn bind_mount(b: &Bind) -> Value {
    let mut options = vec!["rbind", "nosuid", "nodev"];
    options.push(if b.read_only { "ro" } else { "rw" });
    json!({
        "destination": b.destination,
        "type": "bind",
        "source": b.source,
        "options": options,
    })
}

fn seccomp() -> Value {
    let arches: &[&str] = if cfg!(target_arch = "x86_64") {
        &["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"]
    } else if cfg!(target_arch = "aarch64") {
        &["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]
    } else {
        &[]
    };
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": arches,
        "syscalls": [{
            "names": &DENIED_SYSCALLS[..],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": libc::EPERM,
        }],
    })
}

/// The config.json document.
pub fn config(spec: &BundleSpec<'_>) -> Result<Value> {
    let mut mounts = vec![
        json!({"destination": "/proc", "type": "proc", "source": "proc",
               "options": ["nosuid", "noexec", "nodev"]}),
        json!({"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
               "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}),
        json!({"destination": "/dev/pts", "type": "devpts", "source": "devpts",
               "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]}),
        json!({"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
               "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]}),
        json!({"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
               "options": ["nosuid", "noexec", "nodev"]}),
        json!({"destination": "/sys", "type": "sysfs", "source": "sysfs",
               "options": ["nosuid", "noexec", "nodev", "ro"]}),
        json!({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
               "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}),
        // "bind", not "rbind": the view must hold no mount below it.
        json!({"destination": ROOTFS_VIEW_INSIDE, "type": "bind", "source": spec.rootfs,
               "options": ["bind", "nosuid", "nodev", "ro"]}),
    ];
    mounts.extend(spec.binds.iter().map(bind_mount));
    let caps = DEFAULT_CAPS.to_vec();
    let doc = json!({
        "ociVersion": "1.0.2",
        "root": {"path": spec.rootfs, "readonly": false},
        "hostname": spec.hostname,
        "process": {
            "terminal": false,
            "user": {"uid": 0, "gid": 0},
            "args": spec.args,
            "env": spec.env,
            "cwd": spec.cwd,
            "capabilities": {
                "bounding": caps, "effective": caps, "permitted": caps,
                "inheritable": [], "ambient": [],
            },
            "noNewPrivileges": true,
        },
        "mounts": mounts,
        "linux": {
            "uidMappings": [{"containerID": 0, "hostID": ID_BASE, "size": ID_RANGE}],
            "gidMappings": [{"containerID": 0, "hostID": ID_BASE, "size": ID_RANGE}],
            "namespaces": [
                {"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"},
                {"type": "mount"}, {"type": "user"}, {"type": "cgroup"},
            ],
            "cgroupsPath": spec.cgroups_path,
            "resources": spec.resources,
            "maskedPaths": MASKED_PATHS,
            "readonlyPaths": READONLY_PATHS,
            "seccomp": seccomp(),
        },
    });
    // The typed model is the check that the document is a valid runtime spec.
    let typed: oci_spec::runtime::Spec =
        serde_json::from_value(doc.clone()).context("building the OCI runtime spec")?;
    serde_json::to_value(&typed).context("serialising the OCI runtime spec")
}

/// Writes `bundle/config.json`.
pub fn write(bundle: &Path, spec: &BundleSpec<'_>) -> Result<()> {
    let doc = config(spec)?;
    let path = bundle.join("config.json");
    std::fs::write(&path, serde_json::to_vec(&doc)?)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_a_valid_spec_with_the_safe_defaults() {
        let doc = config(&BundleSpec {
            rootfs: Path::new("/r"),
            hostname: "sandbox-x".into(),
            args: vec!["true".into()],
            env: vec!["PATH=/bin".into()],
            cwd: "/workspace".into(),
            binds: vec![Bind {
                source: "/w".into(),
                destination: "/workspace".into(),
                read_only: false,
            }],
            resources: json!({"pids": {"limit": 5}}),
            cgroups_path: "/opensandbox/x".into(),
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(doc["process"]["noNewPrivileges"], true);
        assert_eq!(doc["linux"]["uidMappings"][0]["hostID"], ID_BASE);
        assert_eq!(doc["linux"]["uidMappings"][0]["size"], ID_RANGE);
        let caps = doc["process"]["capabilities"]["effective"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(caps.len(), DEFAULT_CAPS.len());
        assert!(!caps
            .iter()
            .any(|c| c == "CAP_SYS_ADMIN" || c == "CAP_NET_RAW"));
        let ws = doc["mounts"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["destination"] == "/workspace").cloned())
            .unwrap_or_default();
        let opts = ws["options"].as_array().cloned().unwrap_or_default();
        assert!(opts.iter().any(|o| o == "nosuid") && opts.iter().any(|o| o == "nodev"));
        // The agent may build namespaces; nothing else in the filter changed.
        let denied = doc["linux"]["seccomp"]["syscalls"][0]["names"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for name in AGENT_ONLY_SYSCALLS {
            assert!(!denied.iter().any(|d| d == name), "{name}");
        }
        for name in [
            "setns",
            "keyctl",
            "bpf",
            "open_tree",
            "move_mount",
            "fsopen",
        ] {
            assert!(denied.iter().any(|d| d == name), "{name}");
        }
        let view = doc["mounts"]
            .as_array()
            .and_then(|m| {
                m.iter()
                    .find(|m| m["destination"] == ROOTFS_VIEW_INSIDE)
                    .cloned()
            })
            .unwrap_or_default();
        let opts = view["options"].as_array().cloned().unwrap_or_default();
        assert!(opts.iter().any(|o| o == "ro") && !opts.iter().any(|o| o == "rbind"));
    }
}
