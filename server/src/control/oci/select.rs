//! `--runtime auto`: the first standard OCI runtime that really starts a sandbox on
//! this host, probed once at start-up; bubblewrap only when none does.
//!
//! Order: `crun` (the usual choice on pure cgroup v2 hosts, and the fastest), `runc`,
//! `runsc` (gVisor: stronger isolation, slower start). Each is proved by
//! [`OciRuntime::new`], which runs the agent in a throw-away container with a
//! sandbox's namespaces, id mapping and cgroup limits; a runtime that is installed but
//! cannot do that here (Debian's crun 1.8 on a hybrid cgroup v1 host: "cgroups in
//! hybrid mode not supported"; any runtime when the server is not root) is refused,
//! and why is logged.

use std::path::Path;

use super::{OciOptions, OciRuntime};

/// The runtimes `auto` tries, in order.
pub const CANDIDATES: [&str; 3] = ["crun", "runc", "runsc"];

/// The first candidate that works, or `None` (every refusal logged) when the server
/// must fall back to bubblewrap.
pub fn auto(
    options: &dyn Fn(&str) -> anyhow::Result<OciOptions>,
    data_dir: &Path,
    exe: &Path,
) -> anyhow::Result<Option<OciRuntime>> {
    let mut refused = Vec::new();
    for name in CANDIDATES {
        let opts = options(name)?;
        let started = std::time::Instant::now();
        match OciRuntime::new(&opts, data_dir, exe) {
            Ok(rt) => {
                tracing::info!(
                    runtime = name,
                    probe_ms = started.elapsed().as_millis() as u64,
                    refused = refused.join("; "),
                    "--runtime auto: sandboxes run under {name} (the first standard OCI \
                     runtime that starts a sandbox here)"
                );
                return Ok(Some(rt));
            }
            Err(err) => {
                let why = format!("{err:#}");
                tracing::info!(runtime = name, "--runtime auto: {name} refused: {why}");
                refused.push(format!("{name}: {why}"));
            }
        }
    }
    tracing::warn!(
        refused = refused.join("; "),
        "--runtime auto: no standard OCI runtime works on this host; falling back to \
         bubblewrap (sandboxes run on the host's system directories, not the image)"
    );
    Ok(None)
}
