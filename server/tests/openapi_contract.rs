//! The OpenAPI contract (`openapi/*.yaml`) against what the server really routes.
//!
//! 1. The files stand on their own: valid YAML, `openapi: 3.x`, every `$ref` resolves
//!    inside its file, every path template parameter is declared (no Python needed;
//!    `scripts/validate_openapi.py` runs the full validator).
//! 2. Spec operations and the servers' route tables match in both directions:
//!    `execd.yaml` ↔ `agent::routes_table()`; `lifecycle.yaml` + `diagnostics.yaml` +
//!    `egress.yaml` ↔ `control::routes_table()` (egress rows prefixed `egress:`).
//! 3. The tables are not trusted: every execd operation is requested against the agent
//!    router served in-process, every lifecycle/diagnostics/egress operation against the
//!    real server binary. A `405` or a `ROUTE_NOT_FOUND` body means the route is missing.
//!
//! Path parameter names are not part of the wire contract, so `{id}`, `{sandboxId}`
//! and `{*path}` all compare equal to `{}`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::TcpListener as StdTcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_yaml::Value;

const SPEC_FILES: [&str; 4] = [
    "lifecycle.yaml",
    "diagnostics.yaml",
    "execd.yaml",
    "egress.yaml",
];
const HTTP_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];
const EGRESS_PREFIX: &str = "egress:";
/// Generous: the machine is shared and noisy; this only bounds a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------
// Loading the spec
// ---------------------------------------------------------------------------------

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("openapi")
}

fn load(name: &str) -> Value {
    let path = spec_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// One operation of a spec: upper-case method and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Operation {
    method: String,
    path: String,
}

fn operations(spec: &Value) -> Vec<Operation> {
    let mut out = Vec::new();
    let Some(paths) = spec.get("paths").and_then(Value::as_mapping) else {
        return out;
    };
    for (path, item) in paths {
        let Some(path) = path.as_str() else { continue };
        let Some(item) = item.as_mapping() else {
            continue;
        };
        for (key, _) in item {
            if let Some(method) = key.as_str().filter(|k| HTTP_METHODS.contains(k)) {
                out.push(Operation {
                    method: method.to_ascii_uppercase(),
                    path: path.to_string(),
                });
            }
        }
    }
    out.sort();
    out
}

/// Replaces every `{name}` / `{*name}` segment by `{}`: parameter names are not on the
/// wire, so the table and the spec may spell them differently.
fn normalise(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            _ if in_param => {}
            _ => out.push(c),
        }
    }
    out
}

/// Every difference between spec operations and a route table, one line each.
fn compare(what: &str, spec: &[Operation], routes: &[(String, String)]) -> Vec<String> {
    let key = |m: &str, p: &str| (m.to_ascii_uppercase(), normalise(p));
    let spec_keys: BTreeMap<_, _> = spec
        .iter()
        .map(|op| (key(&op.method, &op.path), op))
        .collect();
    let route_keys: BTreeMap<_, _> = routes
        .iter()
        .map(|(m, p)| (key(m, p), (m, p)))
        .collect();
    let mut problems = Vec::new();
    for (k, op) in &spec_keys {
        if !route_keys.contains_key(k) {
            problems.push(format!(
                "{what}: operation {} {} has no route in the table",
                op.method, op.path
            ));
        }
    }
    for (k, (m, p)) in &route_keys {
        if !spec_keys.contains_key(k) {
            problems.push(format!(
                "{what}: route {m} {p} has no operation in the spec"
            ));
        }
    }
    let mut seen = HashSet::new();
    for (m, p) in routes {
        if !seen.insert(key(m, p)) {
            problems.push(format!("{what}: route {m} {p} is listed twice"));
        }
    }
    problems
}

fn owned(table: Vec<(&'static str, &'static str)>) -> Vec<(String, String)> {
    table
        .into_iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect()
}

/// The operations `control::routes_table()` must list: lifecycle and diagnostics as
/// written, egress with the `egress:` prefix.
fn control_spec_operations() -> Vec<Operation> {
    let mut ops = operations(&load("lifecycle.yaml"));
    ops.extend(operations(&load("diagnostics.yaml")));
    ops.extend(
        operations(&load("egress.yaml"))
            .into_iter()
            .map(|op| Operation {
                method: op.method,
                path: format!("{EGRESS_PREFIX}{}", op.path),
            }),
    );
    ops
}

// ---------------------------------------------------------------------------------
// 1. Structure
// ---------------------------------------------------------------------------------

/// Resolves a local JSON pointer (`#/a/b~1c`) inside `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let mut node = root;
    for raw in pointer.strip_prefix('/')?.split('/') {
        let token = raw.replace("~1", "/").replace("~0", "~");
        node = match node {
            Value::Mapping(map) => map.get(Value::String(token))?,
            Value::Sequence(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

fn collect_refs<'a>(node: &'a Value, out: &mut Vec<&'a str>) {
    match node {
        Value::Mapping(map) => {
            for (k, v) in map {
                if k.as_str() == Some("$ref") {
                    if let Some(r) = v.as_str() {
                        out.push(r);
                    }
                }
                collect_refs(v, out);
            }
        }
        Value::Sequence(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Follows `$ref` (repeatedly) so parameters can be inspected.
fn deref<'a>(root: &'a Value, mut node: &'a Value) -> Option<&'a Value> {
    for _ in 0..16 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => node = resolve(root, r)?,
            None => return Some(node),
        }
    }
    None
}

fn declared_path_params(root: &Value, params: Option<&Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in params.and_then(Value::as_sequence).into_iter().flatten() {
        let Some(p) = deref(root, p) else { continue };
        if p.get("in").and_then(Value::as_str) == Some("path") {
            if let Some(name) = p.get("name").and_then(Value::as_str) {
                out.insert(name.to_string());
            }
        }
    }
    out
}

fn template_params(path: &str) -> BTreeSet<String> {
    path.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_string()))
        .collect()
}

fn structural_problems(name: &str, spec: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let version = spec.get("openapi").and_then(Value::as_str).unwrap_or("");
    if !version.starts_with("3.") {
        problems.push(format!("{name}: `openapi` is {version:?}, expected 3.x"));
    }
    for field in ["title", "version"] {
        if spec.get("info").and_then(|i| i.get(field)).is_none() {
            problems.push(format!("{name}: info.{field} missing"));
        }
    }

    let mut refs = Vec::new();
    collect_refs(spec, &mut refs);
    for r in refs {
        if !r.starts_with('#') {
            problems.push(format!(
                "{name}: $ref {r} points outside the file (files must be self-contained)"
            ));
        } else if resolve(spec, r).is_none() {
            problems.push(format!("{name}: $ref {r} does not resolve"));
        }
    }

    let Some(paths) = spec.get("paths").and_then(Value::as_mapping) else {
        problems.push(format!("{name}: no `paths`"));
        return problems;
    };
    if paths.is_empty() {
        problems.push(format!("{name}: `paths` is empty"));
    }
    let mut operation_ids = HashSet::new();
    for (path, item) in paths {
        let path = path.as_str().unwrap_or("<non-string path>");
        if !path.starts_with('/') {
            problems.push(format!("{name}: path {path} does not start with '/'"));
        }
        let path_level = declared_path_params(spec, item.get("parameters"));
        let wanted = template_params(path);
        let Some(item_map) = item.as_mapping() else {
            problems.push(format!("{name}: path {path} is not a mapping"));
            continue;
        };
        for (method, op) in item_map {
            let Some(method) = method.as_str().filter(|m| HTTP_METHODS.contains(m)) else {
                continue;
            };
            let mut declared = path_level.clone();
            declared.extend(declared_path_params(spec, op.get("parameters")));
            for missing in wanted.difference(&declared) {
                problems.push(format!(
                    "{name}: {method} {path}: path parameter {{{missing}}} not declared"
                ));
            }
            for extra in declared.difference(&wanted) {
                problems.push(format!(
                    "{name}: {method} {path}: declares path parameter {extra} not in the template"
                ));
            }
            match op.get("responses").and_then(Value::as_mapping) {
                Some(r) if !r.is_empty() => {}
                _ => problems.push(format!("{name}: {method} {path}: no responses")),
            }
            match op.get("operationId").and_then(Value::as_str) {
                Some(id) if !operation_ids.insert(id.to_string()) => {
                    problems.push(format!("{name}: operationId {id} used twice"))
                }
                Some(_) => {}
                None => problems.push(format!("{name}: {method} {path}: no operationId")),
            }
        }
    }
    problems
}

#[test]
fn spec_files_are_well_formed() {
    let mut problems = Vec::new();
    for name in SPEC_FILES {
        let spec = load(name);
        problems.extend(structural_problems(name, &spec));
    }
    assert!(
        problems.is_empty(),
        "structural problems:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn structure_check_catches_broken_specs() {
    // Guards against a checker that silently accepts everything.
    let broken: Value = serde_yaml::from_str(
        r##"
openapi: 2.0
info: {title: t}
paths:
  /a/{id}:
    get:
      operationId: x
      responses:
        '200': {$ref: '#/components/responses/Nope'}
  /b:
    post:
      operationId: x
      responses: {}
"##,
    )
    .expect("test YAML parses");
    let problems = structural_problems("broken", &broken).join("\n");
    for expected in [
        "expected 3.x",
        "info.version missing",
        "#/components/responses/Nope does not resolve",
        "path parameter {id} not declared",
        "post /b: no responses",
        "operationId x used twice",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
}

// ---------------------------------------------------------------------------------
// 2. Spec ↔ route tables
// ---------------------------------------------------------------------------------

#[test]
fn compare_reports_both_directions() {
    let spec = vec![
        Operation {
            method: "GET".into(),
            path: "/a/{id}".into(),
        },
        Operation {
            method: "POST".into(),
            path: "/b".into(),
        },
    ];
    let routes = vec![
        ("GET".to_string(), "/a/{other}".to_string()),
        ("DELETE".to_string(), "/c".to_string()),
    ];
    let problems = compare("t", &spec, &routes);
    assert_eq!(
        problems,
        vec![
            "t: operation POST /b has no route in the table".to_string(),
            "t: route DELETE /c has no operation in the spec".to_string(),
        ]
    );
    assert_eq!(normalise("/x/{*path}/y/{id}"), "/x/{}/y/{}");
}

#[test]
fn execd_spec_matches_agent_routes() {
    let spec = operations(&load("execd.yaml"));
    let routes = owned(opensandbox_server::agent::routes_table());
    let problems = compare("execd.yaml vs agent::routes_table()", &spec, &routes);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn lifecycle_diagnostics_egress_spec_matches_control_routes() {
    let spec = control_spec_operations();
    let routes = owned(opensandbox_server::control::routes_table());
    let problems = compare(
        "lifecycle+diagnostics+egress vs control::routes_table()",
        &spec,
        &routes,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------
// 3. Probing
// ---------------------------------------------------------------------------------

/// Fills path parameters with harmless values that still parse where types matter.
fn fill(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        let name = rest[start + 1..start + len].trim_start_matches('*');
        out.push_str(match name {
            "port" => "44772",
            "path" => "ping",
            _ => "contract-probe",
        });
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("building the HTTP client")
}

/// Requests `method url` with no body and no query, and says whether the server has
/// a route for it. `Err` = the route is missing (or the request failed).
async fn probe(
    client: &reqwest::Client,
    method: &str,
    url: &str,
    headers: &[(String, String)],
) -> Result<u16, String> {
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|e| format!("bad method {method}: {e}"))?;
    let mut request = client.request(method.clone(), url);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("{method} {url}: request failed: {e}"))?;
    let status = response.status().as_u16();
    if status == 405 {
        return Err(format!("{method} {url}: 405 method not allowed"));
    }
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    // Streams (commands, metrics watch) are left unread: the status line is enough.
    if is_json {
        let body = tokio::time::timeout(REQUEST_TIMEOUT, response.bytes())
            .await
            .map_err(|_| format!("{method} {url}: JSON body did not arrive"))?
            .map_err(|e| format!("{method} {url}: reading body: {e}"))?;
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) {
            if v.get("code").and_then(|c| c.as_str()) == Some("ROUTE_NOT_FOUND") {
                return Err(format!("{method} {url}: {status} ROUTE_NOT_FOUND"));
            }
        }
    }
    Ok(status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_execd_operation_is_routed() {
    let root = tempfile::tempdir().expect("temp dir");
    let workdir = root.path().join("workspace");
    std::fs::create_dir_all(&workdir).expect("creating workdir");
    let app = opensandbox_server::agent::router(opensandbox_server::agent::AgentConfig {
        root: root.path().to_path_buf(),
        workdir,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local addr"));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = http_client();

    // The detector itself must see a missing route and a wrong method.
    assert!(probe(&client, "GET", &format!("{base}/no-such-route"), &[])
        .await
        .is_err_and(|e| e.contains("ROUTE_NOT_FOUND")));
    assert!(probe(&client, "PUT", &format!("{base}/ping"), &[])
        .await
        .is_err_and(|e| e.contains("405")));

    let mut missing = Vec::new();
    let ops = operations(&load("execd.yaml"));
    assert!(!ops.is_empty(), "execd.yaml has no operations");
    for op in &ops {
        let url = format!("{base}{}", fill(&op.path));
        if let Err(e) = probe(&client, &op.method, &url, &[]).await {
            missing.push(e);
        }
    }
    server.abort();
    assert!(
        missing.is_empty(),
        "execd operations the agent does not route:\n  {}",
        missing.join("\n  ")
    );
}

/// The real server binary on a free loopback port, killed on drop.
struct ServerProcess {
    child: Child,
    base: String,
    log: PathBuf,
    _data: tempfile::TempDir,
}

const API_KEY: &str = "contract-test-key";

impl ServerProcess {
    async fn start() -> Self {
        let data = tempfile::tempdir().expect("temp data dir");
        // Reserve a port, then hand it to the server; the tiny race is acceptable in a
        // test (nothing else on this machine binds random loopback ports on purpose).
        let port = StdTcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("finding a free port")
            .port();
        let log = data.path().join("server.log");
        let log_file = std::fs::File::create(&log).expect("creating server log");
        let child = Command::new(env!("CARGO_BIN_EXE_opensandbox-server"))
            .arg("--isolation")
            .arg("none")
            .arg("--api-key")
            .arg(API_KEY)
            .arg("--data-dir")
            .arg(data.path().join("data"))
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("cloning log handle"))
            .stderr(log_file)
            .spawn()
            .expect("starting opensandbox-server");
        let mut server = ServerProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
            _data: data,
        };
        server.wait_healthy().await;
        server
    }

    async fn wait_healthy(&mut self) {
        let client = http_client();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("server exited early ({status}):\n{}", self.log_text());
            }
            let health = client.get(format!("{}/health", self.base)).send().await;
            if health.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("server not healthy within 60 s:\n{}", self.log_text());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_else(|e| format!("<no log: {e}>"))
    }

    fn auth(&self) -> Vec<(String, String)> {
        vec![("OPEN-SANDBOX-API-KEY".to_string(), API_KEY.to_string())]
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lifecycle_and_diagnostics_operation_is_routed() {
    let server = ServerProcess::start().await;
    let client = http_client();
    let auth = server.auth();

    assert!(
        probe(&client, "GET", &format!("{}/v1/no-such-route", server.base), &auth)
            .await
            .is_err_and(|e| e.contains("ROUTE_NOT_FOUND")),
        "the server must answer unknown routes with ROUTE_NOT_FOUND"
    );

    let mut ops = operations(&load("lifecycle.yaml"));
    ops.extend(operations(&load("diagnostics.yaml")));
    let mut missing = Vec::new();
    for op in &ops {
        // `/health` lives at the root only; everything else at `/v1` and `/`.
        let prefixes: &[&str] = if op.path == "/health" {
            &[""]
        } else {
            &["/v1", ""]
        };
        for prefix in prefixes {
            let url = format!("{}{prefix}{}", server.base, fill(&op.path));
            if let Err(e) = probe(&client, &op.method, &url, &auth).await {
                missing.push(e);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "lifecycle/diagnostics operations the server does not route:\n  {}\nserver log:\n{}",
        missing.join("\n  "),
        server.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_egress_operation_is_routed() {
    let server = ServerProcess::start().await;
    let client = http_client();

    // Egress lives behind a real sandbox's proxy route, so create one.
    let created = client
        .post(format!("{}/v1/sandboxes", server.base))
        .header("OPEN-SANDBOX-API-KEY", API_KEY)
        .json(&serde_json::json!({
            "image": {"uri": "contract-probe"},
            "entrypoint": ["sleep", "600"],
            "resourceLimits": {"cpu": "1", "memory": "512Mi"},
        }))
        .send()
        .await
        .expect("create request");
    let status = created.status();
    let body: serde_json::Value = created.json().await.unwrap_or_default();
    assert_eq!(
        status.as_u16(),
        202,
        "create sandbox: {body}\n{}",
        server.log_text()
    );
    let id = body["id"].as_str().expect("sandbox id").to_string();

    let endpoint: serde_json::Value = client
        .get(format!(
            "{}/v1/sandboxes/{id}/endpoints/18080?use_server_proxy=true",
            server.base
        ))
        .header("OPEN-SANDBOX-API-KEY", API_KEY)
        .send()
        .await
        .expect("endpoint request")
        .json()
        .await
        .expect("endpoint JSON");
    let headers: Vec<(String, String)> = endpoint["headers"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();

    let base = format!("{}/v1/sandboxes/{id}/proxy/18080", server.base);
    let mut missing = Vec::new();
    let ops = operations(&load("egress.yaml"));
    assert!(!ops.is_empty(), "egress.yaml has no operations");
    for op in &ops {
        let url = format!("{base}{}", op.path);
        match probe(&client, &op.method, &url, &headers).await {
            // No egress path has an id in it, so a 404 can only mean "no such route".
            Ok(404) => missing.push(format!("{} {url}: 404", op.method)),
            Ok(401) => missing.push(format!(
                "{} {url}: 401 with the endpoint's own headers {headers:?}",
                op.method
            )),
            Ok(_) => {}
            Err(e) => missing.push(e),
        }
    }

    let _ = client
        .delete(format!("{}/v1/sandboxes/{id}", server.base))
        .header("OPEN-SANDBOX-API-KEY", API_KEY)
        .send()
        .await;
    assert!(
        missing.is_empty(),
        "egress operations the server does not route:\n  {}\nserver log:\n{}",
        missing.join("\n  "),
        server.log_text()
    );
}
