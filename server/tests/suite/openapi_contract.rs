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
//! 4. Real response bodies (lifecycle, snapshots, endpoints, diagnostics, egress policy,
//!    execd metrics/files/sessions/command stream/status, errors) conform to the
//!    schemas, with undeclared properties counted as errors.
//!
//! Path parameter names are not part of the wire contract, so `{id}`, `{sandboxId}`
//! and `{*path}` all compare equal to `{}`.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
    let route_keys: BTreeMap<_, _> = routes.iter().map(|(m, p)| (key(m, p), (m, p))).collect();
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
        probe(
            &client,
            "GET",
            &format!("{}/v1/no-such-route", server.base),
            &auth
        )
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

    // Egress lives behind a real sandbox's proxy route, so create one. Sandboxes
    // outlive a killed server by design, so its entrypoint is short-lived in case the
    // test fails before deleting it.
    let created = client
        .post(format!("{}/v1/sandboxes", server.base))
        .header("OPEN-SANDBOX-API-KEY", API_KEY)
        .json(&serde_json::json!({
            "image": {"uri": "contract-probe"},
            "entrypoint": ["sleep", "120"],
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

// ---------------------------------------------------------------------------------
// 4. Response shapes
// ---------------------------------------------------------------------------------

/// Checks `value` against the subset of OpenAPI 3.0 schema keywords the files use
/// (`$ref`, `type`, `nullable`, `enum`, `required`, `properties`,
/// `additionalProperties`, `items`, `oneOf`). Stricter than JSON Schema on purpose: a
/// property the schema does not declare is reported, so the spec has to document
/// every field the server sends.
fn schema_problems(
    root: &Value,
    schema: &Value,
    value: &serde_json::Value,
    at: &str,
    out: &mut Vec<String>,
) {
    let Some(schema) = deref(root, schema) else {
        out.push(format!("{at}: schema does not resolve"));
        return;
    };
    if value.is_null() {
        if schema.get("nullable").and_then(Value::as_bool) != Some(true) {
            out.push(format!("{at}: null is not allowed"));
        }
        return;
    }
    if let Some(alternatives) = schema.get("oneOf").and_then(Value::as_sequence) {
        let matches = alternatives.iter().any(|alt| {
            let mut scratch = Vec::new();
            schema_problems(root, alt, value, at, &mut scratch);
            scratch.is_empty()
        });
        if !matches {
            out.push(format!("{at}: matches no `oneOf` alternative: {value}"));
        }
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str) {
        let ok = match ty {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            out.push(format!("{at}: expected {ty}, got {value}"));
            return;
        }
    }
    if let (Some(allowed), Some(s)) = (
        schema.get("enum").and_then(Value::as_sequence),
        value.as_str(),
    ) {
        if !allowed.iter().any(|a| a.as_str() == Some(s)) {
            out.push(format!("{at}: {s:?} is not one of the enum values"));
        }
    }
    if let Some(object) = value.as_object() {
        for required in schema
            .get("required")
            .and_then(Value::as_sequence)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(required) {
                out.push(format!("{at}: required property `{required}` missing"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_mapping);
        let additional = schema.get("additionalProperties");
        for (name, child) in object {
            let child_at = format!("{at}.{name}");
            if let Some(child_schema) = properties.and_then(|p| p.get(Value::String(name.clone())))
            {
                schema_problems(root, child_schema, child, &child_at, out);
            } else if let Some(extra) = additional.filter(|a| a.is_mapping()) {
                schema_problems(root, extra, child, &child_at, out);
            } else if additional.and_then(Value::as_bool) != Some(true) {
                out.push(format!("{at}: property `{name}` is not in the spec"));
            }
        }
    }
    if let (Some(items), Some(item_schema)) = (value.as_array(), schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            schema_problems(root, item_schema, item, &format!("{at}[{i}]"), out);
        }
    }
}

/// Checks a value against `#/components/schemas/{name}` of `spec`.
fn check_shape(
    spec: &Value,
    name: &str,
    what: &str,
    value: &serde_json::Value,
    out: &mut Vec<String>,
) {
    let reference = Value::Mapping(
        [(
            Value::String("$ref".into()),
            Value::String(format!("#/components/schemas/{name}")),
        )]
        .into_iter()
        .collect(),
    );
    schema_problems(spec, &reference, value, &format!("{what} ({name})"), out);
}

#[test]
fn shape_check_catches_wrong_bodies() {
    let spec = load("lifecycle.yaml");
    let mut problems = Vec::new();
    check_shape(
        &spec,
        "Sandbox",
        "bad",
        &serde_json::json!({
            "id": 7,
            "status": {"state": "Running"},
            "created_at": "2025-01-01T00:00:00Z",
            "entrypoint": ["sleep"],
            "platform": {"os": "plan9", "arch": "amd64"},
        }),
        &mut problems,
    );
    let problems = problems.join("\n");
    for expected in [
        "bad (Sandbox).id: expected string",
        "required property `createdAt` missing",
        "property `created_at` is not in the spec",
        "\"plan9\" is not one of the enum values",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
    let mut none = Vec::new();
    check_shape(
        &spec,
        "ErrorResponse",
        "good",
        &serde_json::json!({"code": "X", "message": "y"}),
        &mut none,
    );
    assert!(none.is_empty(), "{none:?}");
}

/// Sends a request and returns status, headers and the JSON body (Null if none).
async fn call(
    client: &reqwest::Client,
    request: reqwest::RequestBuilder,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let request = request.build().expect("building request");
    let what = format!("{} {}", request.method(), request.url());
    let response = client
        .execute(request)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .bytes()
        .await
        .unwrap_or_else(|e| panic!("{what}: reading body: {e}"));
    let json = if body.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&body).into_owned())
        })
    };
    (status, headers, json)
}

/// Records a wrong status, and a missing `X-Request-ID` where the API promises one.
fn expect_status(
    out: &mut Vec<String>,
    what: &str,
    got: u16,
    want: u16,
    headers: Option<&reqwest::header::HeaderMap>,
) {
    if got != want {
        out.push(format!("{what}: status {got}, expected {want}"));
    }
    if headers.is_some_and(|h| !h.contains_key("x-request-id")) {
        out.push(format!("{what}: no X-Request-ID header"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_responses_match_schemas() {
    let lifecycle = load("lifecycle.yaml");
    let diagnostics = load("diagnostics.yaml");
    let egress = load("egress.yaml");
    let server = ServerProcess::start().await;
    let client = http_client();
    let v1 = format!("{}/v1", server.base);
    let key = ("OPEN-SANDBOX-API-KEY", API_KEY);
    let mut problems = Vec::new();
    let mut shapes = Vec::new();

    let (s, h, body) = call(&client, client.get(format!("{}/health", server.base))).await;
    expect_status(&mut problems, "GET /health", s, 200, Some(&h));
    check_shape(
        &lifecycle,
        "HealthResponse",
        "GET /health",
        &body,
        &mut shapes,
    );

    let (s, h, created) = call(
        &client,
        client
            .post(format!("{v1}/sandboxes"))
            .header(key.0, key.1)
            .json(&serde_json::json!({
                "image": {"uri": "contract-probe"},
                "entrypoint": ["sleep", "120"],
                "timeout": 3600,
                "resourceLimits": {"cpu": "1", "memory": "512Mi"},
                "metadata": {"suite": "contract"},
            })),
    )
    .await;
    expect_status(&mut problems, "POST /sandboxes", s, 202, Some(&h));
    check_shape(
        &lifecycle,
        "CreateSandboxResponse",
        "POST /sandboxes",
        &created,
        &mut shapes,
    );
    let id = created["id"].as_str().unwrap_or("missing-id").to_string();

    let (s, h, body) = call(
        &client,
        client
            .get(format!("{v1}/sandboxes/{id}"))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "GET /sandboxes/{id}", s, 200, Some(&h));
    check_shape(
        &lifecycle,
        "Sandbox",
        "GET /sandboxes/{id}",
        &body,
        &mut shapes,
    );

    let (s, h, body) = call(
        &client,
        client
            .get(format!(
                "{v1}/sandboxes?state=Running&state=Pending&pageSize=5"
            ))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "GET /sandboxes", s, 200, Some(&h));
    check_shape(
        &lifecycle,
        "ListSandboxesResponse",
        "GET /sandboxes",
        &body,
        &mut shapes,
    );

    let (s, h, body) = call(
        &client,
        client
            .patch(format!("{v1}/sandboxes/{id}/metadata"))
            .header(key.0, key.1)
            .json(&serde_json::json!({"team": "ml", "suite": null})),
    )
    .await;
    expect_status(
        &mut problems,
        "PATCH /sandboxes/{id}/metadata",
        s,
        200,
        Some(&h),
    );
    check_shape(&lifecycle, "Sandbox", "PATCH metadata", &body, &mut shapes);

    let expires_at = (chrono::Utc::now() + chrono::Duration::hours(2))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (s, h, body) = call(
        &client,
        client
            .post(format!("{v1}/sandboxes/{id}/renew-expiration"))
            .header(key.0, key.1)
            .json(&serde_json::json!({ "expiresAt": expires_at })),
    )
    .await;
    expect_status(&mut problems, "POST renew-expiration", s, 200, Some(&h));
    check_shape(
        &lifecycle,
        "RenewSandboxExpirationResponse",
        "POST renew-expiration",
        &body,
        &mut shapes,
    );

    let mut egress_headers = Vec::new();
    for port in [44772, 18080] {
        let (s, h, body) = call(
            &client,
            client
                .get(format!(
                    "{v1}/sandboxes/{id}/endpoints/{port}?use_server_proxy=false"
                ))
                .header(key.0, key.1),
        )
        .await;
        expect_status(&mut problems, "GET endpoints", s, 200, Some(&h));
        check_shape(
            &lifecycle,
            "Endpoint",
            &format!("GET endpoints/{port}"),
            &body,
            &mut shapes,
        );
        if port == 18080 {
            egress_headers = body["headers"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
        }
    }

    let mut policy = client.get(format!("{v1}/sandboxes/{id}/proxy/18080/policy"));
    for (k, v) in &egress_headers {
        policy = policy.header(k, v);
    }
    let (s, _, body) = call(&client, policy).await;
    if s != 200 {
        problems.push(format!("GET egress /policy: status {s}: {body}"));
    }
    check_shape(
        &egress,
        "PolicyStatusResponse",
        "GET egress /policy",
        &body,
        &mut shapes,
    );

    let (s, h, body) = call(
        &client,
        client
            .get(format!("{v1}/sandboxes/{id}/diagnostics/logs?scope=all"))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "GET diagnostics/logs", s, 200, Some(&h));
    check_shape(
        &diagnostics,
        "DiagnosticContentResponse",
        "GET diagnostics/logs",
        &body,
        &mut shapes,
    );

    let (s, h, snapshot) = call(
        &client,
        client
            .post(format!("{v1}/sandboxes/{id}/snapshots"))
            .header(key.0, key.1)
            .json(&serde_json::json!({"name": "contract"})),
    )
    .await;
    expect_status(&mut problems, "POST snapshots", s, 202, Some(&h));
    check_shape(
        &lifecycle,
        "Snapshot",
        "POST snapshots",
        &snapshot,
        &mut shapes,
    );
    let snapshot_id = snapshot["id"].as_str().unwrap_or("missing-id").to_string();

    let (s, h, body) = call(
        &client,
        client
            .get(format!("{v1}/snapshots/{snapshot_id}"))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "GET /snapshots/{id}", s, 200, Some(&h));
    check_shape(
        &lifecycle,
        "Snapshot",
        "GET /snapshots/{id}",
        &body,
        &mut shapes,
    );

    let (s, h, body) = call(
        &client,
        client
            .get(format!("{v1}/snapshots?sandboxId={id}"))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "GET /snapshots", s, 200, Some(&h));
    check_shape(
        &lifecycle,
        "ListSnapshotsResponse",
        "GET /snapshots",
        &body,
        &mut shapes,
    );

    // Errors share one shape.
    let (s, h, body) = call(
        &client,
        client
            .get(format!("{v1}/sandboxes/contract-missing"))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "GET unknown sandbox", s, 404, Some(&h));
    check_shape(
        &lifecycle,
        "ErrorResponse",
        "GET unknown sandbox",
        &body,
        &mut shapes,
    );
    let (s, h, body) = call(
        &client,
        client
            .post(format!("{v1}/sandboxes"))
            .header(key.0, key.1)
            .json(&serde_json::json!({})),
    )
    .await;
    expect_status(&mut problems, "POST /sandboxes {}", s, 400, Some(&h));
    check_shape(
        &lifecycle,
        "ErrorResponse",
        "POST /sandboxes {}",
        &body,
        &mut shapes,
    );
    let (s, h, body) = call(&client, client.get(format!("{v1}/sandboxes"))).await;
    expect_status(
        &mut problems,
        "GET /sandboxes without key",
        s,
        401,
        Some(&h),
    );
    check_shape(
        &lifecycle,
        "ErrorResponse",
        "GET /sandboxes without key",
        &body,
        &mut shapes,
    );

    let (s, h, _) = call(
        &client,
        client
            .delete(format!("{v1}/sandboxes/{id}"))
            .header(key.0, key.1),
    )
    .await;
    expect_status(&mut problems, "DELETE /sandboxes/{id}", s, 204, Some(&h));

    problems.extend(shapes);
    assert!(
        problems.is_empty(),
        "lifecycle responses that break the contract:\n  {}\nserver log:\n{}",
        problems.join("\n  "),
        server.log_text()
    );
}

/// Splits an event stream into JSON frames the tolerant way clients do.
fn stream_frames(body: &str) -> Vec<serde_json::Value> {
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(':'))
        .filter(|l| !["event:", "id:", "retry:"].iter().any(|p| l.starts_with(p)))
        .map(|l| l.strip_prefix("data:").map_or(l, str::trim_start))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("frame {l:?} is not JSON: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execd_responses_match_schemas() {
    let execd = load("execd.yaml");
    let root = tempfile::tempdir().expect("temp dir");
    let workdir = root.path().join("workspace");
    std::fs::create_dir_all(&workdir).expect("creating workdir");
    std::fs::write(workdir.join("hello.txt"), "hello\n").expect("writing a file");
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
    let mut problems = Vec::new();
    let mut shapes = Vec::new();

    let (s, _, body) = call(&client, client.get(format!("{base}/metrics"))).await;
    expect_status(&mut problems, "GET /metrics", s, 200, None);
    check_shape(&execd, "Metrics", "GET /metrics", &body, &mut shapes);

    let (s, _, body) = call(
        &client,
        client.get(format!("{base}/files/info?path=/workspace/hello.txt")),
    )
    .await;
    expect_status(&mut problems, "GET /files/info", s, 200, None);
    match body.as_object() {
        Some(map) if !map.is_empty() => {
            for (path, info) in map {
                check_shape(
                    &execd,
                    "FileInfo",
                    &format!("GET /files/info[{path}]"),
                    info,
                    &mut shapes,
                );
            }
        }
        _ => shapes.push(format!(
            "GET /files/info: expected a non-empty map, got {body}"
        )),
    }

    let (s, _, body) = call(
        &client,
        client.get(format!("{base}/directories/list?path=/workspace")),
    )
    .await;
    expect_status(&mut problems, "GET /directories/list", s, 200, None);
    match body.as_array() {
        Some(items) if !items.is_empty() => {
            for item in items {
                check_shape(
                    &execd,
                    "FileInfo",
                    "GET /directories/list[]",
                    item,
                    &mut shapes,
                );
            }
        }
        _ => shapes.push(format!(
            "GET /directories/list: expected a non-empty array, got {body}"
        )),
    }

    let (s, _, body) = call(
        &client,
        client
            .post(format!("{base}/session"))
            .json(&serde_json::json!({})),
    )
    .await;
    expect_status(&mut problems, "POST /session", s, 200, None);
    check_shape(
        &execd,
        "CreateSessionResponse",
        "POST /session",
        &body,
        &mut shapes,
    );
    if let Some(session) = body["session_id"].as_str() {
        let (s, _, _) = call(&client, client.delete(format!("{base}/session/{session}"))).await;
        expect_status(&mut problems, "DELETE /session/{id}", s, 200, None);
    }

    let response = client
        .post(format!("{base}/command"))
        .json(&serde_json::json!({"command": "echo hi; echo oops >&2; exit 3"}))
        .send()
        .await
        .expect("POST /command");
    expect_status(
        &mut problems,
        "POST /command",
        response.status().as_u16(),
        200,
        None,
    );
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !content_type.starts_with("text/event-stream") {
        problems.push(format!("POST /command: content type {content_type:?}"));
    }
    let text = tokio::time::timeout(REQUEST_TIMEOUT, response.text())
        .await
        .expect("command stream ends")
        .expect("reading command stream");
    let frames = stream_frames(&text);
    for frame in &frames {
        check_shape(
            &execd,
            "ServerStreamEvent",
            "POST /command frame",
            frame,
            &mut shapes,
        );
    }
    let types: Vec<&str> = frames.iter().filter_map(|f| f["type"].as_str()).collect();
    if types.first() != Some(&"init") || !types.contains(&"error") {
        problems.push(format!("POST /command: event types {types:?}"));
    }
    let command_id = frames
        .first()
        .and_then(|f| f["text"].as_str())
        .unwrap_or("missing-id")
        .to_string();
    let (s, _, body) = call(
        &client,
        client.get(format!("{base}/command/status/{command_id}")),
    )
    .await;
    expect_status(&mut problems, "GET /command/status/{id}", s, 200, None);
    check_shape(
        &execd,
        "CommandStatusResponse",
        "GET /command/status/{id}",
        &body,
        &mut shapes,
    );
    if body["exit_code"] != serde_json::json!(3) {
        problems.push(format!(
            "GET /command/status/{{id}}: exit_code not 3: {body}"
        ));
    }

    let (s, _, body) = call(
        &client,
        client.get(format!("{base}/code/contexts/contract-missing")),
    )
    .await;
    expect_status(&mut problems, "GET unknown context", s, 404, None);
    check_shape(
        &execd,
        "ErrorResponse",
        "GET unknown context",
        &body,
        &mut shapes,
    );

    server.abort();
    problems.extend(shapes);
    assert!(
        problems.is_empty(),
        "execd responses that break the contract:\n  {}",
        problems.join("\n  ")
    );
}
