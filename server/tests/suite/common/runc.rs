//! The runc backend's test fixtures, shared by `oci_runc.rs`, `isolation.rs` and
//! `oci_registry.rs`: why a test cannot run on this machine (the tests print it and
//! pass), and a server on the runc backend that cleans up its containers and mounts.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Server, EXECD_PORT};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The image URI to test with, or why these tests cannot run here.
pub fn runc_image() -> Result<String, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root (runc with cgroup limits needs root)".into());
    }
    let has_runc = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("runc").is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin/runc").is_file();
    if !has_runc {
        return Err("runc is not installed (apt-get install runc)".into());
    }
    if let Ok(uri) = std::env::var("OSB_TEST_IMAGE") {
        return Ok(uri);
    }
    let layout = repo_root().join(".work/images/debian-python");
    if !layout.join("index.json").is_file() {
        return Err(format!(
            "no local image at {} (run scripts/build-image.sh)",
            layout.display()
        ));
    }
    Ok(format!("oci:{}:latest", layout.display()))
}

#[macro_export]
macro_rules! need_runc {
    () => {
        match $crate::common::runc::runc_image() {
            Ok(uri) => uri,
            Err(why) => {
                eprintln!("SKIPPED (runc backend): {why}");
                return;
            }
        }
    };
}

/// The local layout (without `oci:`), or why these tests cannot run here.
pub fn registry_layout() -> Result<PathBuf, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root (unpacking shifts owners; runc needs root)".into());
    }
    if !Path::new("/usr/bin/docker-registry").is_file() {
        return Err("docker-registry is not installed (apt-get install docker-registry)".into());
    }
    let layout = repo_root().join(".work/images/debian-python");
    if !layout.join("index.json").is_file() {
        return Err(format!(
            "no local image at {} (run scripts/build-image.sh)",
            layout.display()
        ));
    }
    Ok(layout)
}

/// A server on the runc backend; on drop, removes any container and mount left.
pub struct RuncServer {
    pub server: Server,
    pub image: String,
}

impl RuncServer {
    pub fn start(image: &str) -> Self {
        Self::start_with(image, &[])
    }

    pub fn start_with(image: &str, extra: &[&str]) -> Self {
        let mut args = vec!["--isolation", "auto", "--runtime", "runc"];
        args.extend_from_slice(extra);
        let server = Server::start(&args);
        Self {
            server,
            image: image.to_string(),
        }
    }

    pub async fn create_with(&self, extra: Value) -> Value {
        let mut body = json!({
            "image": {"uri": self.image},
            "entrypoint": ["sleep", "infinity"],
            "timeout": 600,
        });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        let resp = self
            .server
            .post("/v1/sandboxes")
            .json(&body)
            .send()
            .await
            .expect("create");
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.expect("json");
        assert_eq!(status, 202, "create: {v}\n{}", self.server.log());
        assert_eq!(
            v["status"]["state"],
            "Running",
            "{v}\n{}",
            self.server.log()
        );
        v
    }

    pub async fn create(&self, extra: Value) -> String {
        self.create_with(extra).await["id"]
            .as_str()
            .expect("id")
            .to_string()
    }

    /// Runs a command; stdout joined by newlines and the exit code.
    pub async fn sh(&self, id: &str, command: &str) -> (String, Option<i64>) {
        let (lines, code) = self.server.run(id, command).await;
        (lines.join("\n"), code)
    }

    /// Runs `command` and asserts it fails; returns its output.
    pub async fn must_fail(&self, id: &str, command: &str) -> String {
        let (out, code) = self.sh(id, command).await;
        assert_ne!(code, Some(0), "{command:?} succeeded: {out}");
        out
    }

    /// Runs a Python snippet; returns its stdout.
    pub async fn py(&self, id: &str, code: &str) -> String {
        let cmd = format!("python3 - <<'PY'\n{code}\nPY");
        self.sh(id, &cmd).await.0
    }

    /// The raw event stream of a command (to read its error).
    pub async fn events(&self, id: &str, command: &str) -> Vec<Value> {
        let (url, headers) = self.server.endpoint(id, EXECD_PORT).await;
        let mut req = self.server.client.post(format!("{url}/command"));
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        let text = req
            .json(&json!({ "command": command }))
            .send()
            .await
            .expect("command")
            .text()
            .await
            .expect("stream");
        super::parse_events(&text)
    }

    pub fn cgroup_file(&self, controller: &str, id: &str, file: &str) -> PathBuf {
        PathBuf::from(format!(
            "/sys/fs/cgroup/{controller}/opensandbox/{id}/{file}"
        ))
    }
}

impl Drop for RuncServer {
    fn drop(&mut self) {
        let state = self.server.data_dir.join("oci/state");
        if let Ok(entries) = std::fs::read_dir(&state) {
            for e in entries.flatten() {
                let _ = std::process::Command::new("runc")
                    .arg("--root")
                    .arg(&state)
                    .args(["delete", "--force"])
                    .arg(e.file_name())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
        let needle = self.server.data_dir.to_string_lossy().into_owned();
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
            // Deepest first: binds over fs/ sit on top of the disk mounts.
            let mut targets: Vec<String> = mounts
                .lines()
                .filter_map(|l| l.split(' ').nth(1))
                .filter(|t| t.starts_with(&needle))
                .map(String::from)
                .collect();
            targets.reverse();
            for target in targets {
                let _ = std::process::Command::new("umount")
                    .args(["-l", &target])
                    .status();
            }
        }
    }
}
