//! Every file and directory route of the execd API against a real agent on loopback.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::files_support;

use std::os::unix::fs::PermissionsExt;

use files_support::{expect_error, file_part, metadata_part, start, upload};
use serde_json::{json, Value};

#[tokio::test]
async fn several_files_in_one_upload_land_with_their_modes() {
    let agent = start().await;
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            metadata_part(json!({"path": "/workspace/a/b/one.txt", "mode": 600, "owner": null, "group": null})),
        )
        .part("file", file_part(b"first".to_vec(), "one.txt"))
        .part("metadata", metadata_part(json!({"path": "two.bin"})))
        .part("file", file_part(vec![0, 1, 2, 255], "two.bin"))
        .part("metadata", metadata_part(json!({"path": "~/three.txt", "mode": 755})))
        .part("file", file_part(b"third".to_vec(), "three.txt"));
    let resp = agent
        .client
        .post(agent.url("/files/upload"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());

    let one = agent.host("/workspace/a/b/one.txt");
    assert_eq!(std::fs::read(&one).unwrap(), b"first");
    assert_eq!(
        std::fs::metadata(&one).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Relative paths start at the working directory.
    assert_eq!(
        std::fs::read(agent.host("/workspace/two.bin")).unwrap(),
        [0, 1, 2, 255]
    );

    let info: Value = agent
        .client
        .get(agent.url("/files/info?path=/workspace/a/b/one.txt&path=two.bin"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let one = &info["/workspace/a/b/one.txt"];
    assert_eq!(one["path"], "/workspace/a/b/one.txt");
    assert_eq!(one["type"], "file");
    assert_eq!(one["size"], 5);
    assert_eq!(one["mode"], 600);
    assert!(!one["owner"].as_str().unwrap().is_empty());
    assert!(!one["group"].as_str().unwrap().is_empty());
    for key in ["modified_at", "created_at"] {
        let t = one[key].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(t).is_ok(), "{key}={t}");
    }
    let two = &info["two.bin"];
    assert_eq!(two["path"], "/workspace/two.bin");
    assert_eq!(two["size"], 4);
}

#[tokio::test]
async fn a_file_part_before_its_metadata_is_still_placed() {
    let agent = start().await;
    let form = reqwest::multipart::Form::new()
        .part("file", file_part(b"late metadata".to_vec(), "x"))
        .part(
            "metadata",
            metadata_part(json!({"path": "/workspace/late.txt"})),
        );
    let resp = agent
        .client
        .post(agent.url("/files/upload"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        std::fs::read(agent.host("/workspace/late.txt")).unwrap(),
        b"late metadata"
    );
}

#[tokio::test]
async fn upload_errors_use_the_invalid_file_codes() {
    let agent = start().await;
    let post = |form: reqwest::multipart::Form| {
        agent
            .client
            .post(agent.url("/files/upload"))
            .multipart(form)
            .send()
    };

    let only_file = reqwest::multipart::Form::new().part("file", file_part(b"x".to_vec(), "x"));
    expect_error(post(only_file).await.unwrap(), 400, "INVALID_FILE_METADATA").await;

    let only_meta = reqwest::multipart::Form::new()
        .part("metadata", metadata_part(json!({"path": "/workspace/m"})));
    expect_error(post(only_meta).await.unwrap(), 400, "INVALID_FILE_CONTENT").await;

    let bad_json = reqwest::multipart::Form::new()
        .part(
            "metadata",
            reqwest::multipart::Part::bytes(b"{not json".to_vec()).file_name("metadata"),
        )
        .part("file", file_part(b"x".to_vec(), "x"));
    expect_error(post(bad_json).await.unwrap(), 400, "INVALID_FILE_METADATA").await;

    let empty_path = reqwest::multipart::Form::new()
        .part("metadata", metadata_part(json!({"path": ""})))
        .part("file", file_part(b"x".to_vec(), "x"));
    expect_error(
        post(empty_path).await.unwrap(),
        400,
        "INVALID_FILE_METADATA",
    )
    .await;

    let mismatched = reqwest::multipart::Form::new()
        .part("metadata", metadata_part(json!({"path": "/workspace/p1"})))
        .part("file", file_part(b"x".to_vec(), "x"))
        .part("metadata", metadata_part(json!({"path": "/workspace/p2"})));
    expect_error(post(mismatched).await.unwrap(), 400, "INVALID_FILE").await;

    let not_multipart = agent
        .client
        .post(agent.url("/files/upload"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    expect_error(not_multipart, 400, "INVALID_FILE").await;

    let truncated = agent
        .client
        .post(agent.url("/files/upload"))
        .header("content-type", "multipart/form-data; boundary=XYZ")
        .body("--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nabc")
        .send()
        .await
        .unwrap();
    expect_error(truncated, 400, "INVALID_FILE").await;
}

#[tokio::test]
async fn download_whole_range_and_lines() {
    let agent = start().await;
    agent.write("/workspace/d.txt", b"0123456789");

    let full = agent
        .client
        .get(agent.url("/files/download?path=/workspace/d.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(full.status(), 200);
    assert_eq!(full.headers()["content-length"], "10");
    assert_eq!(full.headers()["content-type"], "application/octet-stream");
    assert_eq!(
        full.headers()["content-disposition"],
        "attachment; filename=\"d.txt\""
    );
    assert_eq!(full.bytes().await.unwrap(), "0123456789");

    for (range, body, content_range) in [
        ("bytes=2-5", "2345", "bytes 2-5/10"),
        ("bytes=7-", "789", "bytes 7-9/10"),
        ("bytes=-3", "789", "bytes 7-9/10"),
        ("bytes=8-100", "89", "bytes 8-9/10"),
        ("bytes=0-0,4-5", "0", "bytes 0-0/10"),
    ] {
        let resp = agent
            .client
            .get(agent.url("/files/download?path=d.txt"))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 206, "{range}");
        assert_eq!(resp.headers()["content-range"], content_range, "{range}");
        assert_eq!(
            resp.headers()["content-length"],
            body.len().to_string().as_str()
        );
        assert_eq!(resp.text().await.unwrap(), body, "{range}");
    }

    for range in [
        "bytes=10-",
        "bytes=5-2",
        "bytes=-0",
        "lines=1-2",
        "bytes=a-b",
    ] {
        let resp = agent
            .client
            .get(agent.url("/files/download?path=d.txt"))
            .header("range", range)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["content-range"], "bytes */10", "{range}");
        expect_error(resp, 416, "UNKNOWN").await;
    }

    agent.write("/workspace/lines.txt", b"one\r\ntwo\nthree\n\nfive\nsix");
    let get_lines = |q: &str| {
        agent
            .client
            .get(agent.url(&format!("/files/download?path=lines.txt&{q}")))
            .send()
    };
    let resp = get_lines("offset=2&limit=3").await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(resp.text().await.unwrap(), "two\nthree\n");
    let resp = get_lines("offset=1&limit=1").await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "one");
    let resp = get_lines("offset=5").await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "five\nsix");
    let resp = get_lines("limit=2").await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "one\ntwo");
    let resp = get_lines("offset=100").await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "");
    expect_error(
        get_lines("offset=0").await.unwrap(),
        400,
        "INVALID_REQUEST_BODY",
    )
    .await;
    expect_error(
        get_lines("limit=x").await.unwrap(),
        400,
        "INVALID_REQUEST_BODY",
    )
    .await;

    let both = agent
        .client
        .get(agent.url("/files/download?path=lines.txt&offset=1"))
        .header("range", "bytes=0-1")
        .send()
        .await
        .unwrap();
    expect_error(both, 400, "INVALID_REQUEST_BODY").await;
}

#[tokio::test]
async fn download_edge_cases() {
    let agent = start().await;
    agent.write("/workspace/empty", b"");
    let resp = agent
        .client
        .get(agent.url("/files/download?path=empty"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-length"], "0");
    assert!(resp.bytes().await.unwrap().is_empty());

    let resp = agent
        .client
        .get(agent.url("/files/download?path=empty"))
        .header("range", "bytes=0-")
        .send()
        .await
        .unwrap();
    expect_error(resp, 416, "UNKNOWN").await;

    agent.write("/workspace/résumé 1.txt", b"cv");
    let resp = agent
        .client
        .get(agent.url("/files/download"))
        .query(&[("path", "/workspace/résumé 1.txt")])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let cd = resp.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(cd.starts_with("attachment; filename=\""), "{cd}");
    assert!(
        cd.contains("filename*=UTF-8''r%C3%A9sum%C3%A9%201.txt"),
        "{cd}"
    );
    assert_eq!(resp.bytes().await.unwrap(), "cv");

    let missing = agent
        .client
        .get(agent.url("/files/download?path=/workspace/nope"))
        .send()
        .await
        .unwrap();
    expect_error(missing, 404, "FILE_NOT_FOUND").await;

    let dir = agent
        .client
        .get(agent.url("/files/download?path=/workspace"))
        .send()
        .await
        .unwrap();
    expect_error(dir, 400, "INVALID_PATH").await;

    let no_path = agent
        .client
        .get(agent.url("/files/download"))
        .send()
        .await
        .unwrap();
    expect_error(no_path, 400, "MISSING_QUERY").await;
}

#[tokio::test]
async fn paths_cannot_escape_the_root() {
    let agent = start().await;
    let ws = agent.host("/workspace");
    std::os::unix::fs::symlink("/etc", ws.join("abs-etc")).unwrap();
    std::os::unix::fs::symlink("../../../../../../../../etc", ws.join("rel-etc")).unwrap();

    let get = |path: &str| {
        agent
            .client
            .get(agent.url("/files/download"))
            .query(&[("path", path)])
            .send()
    };
    // Lexical climbing out.
    expect_error(
        get("../../../../../../etc/passwd").await.unwrap(),
        403,
        "INVALID_PATH",
    )
    .await;
    expect_error(get("/../etc/passwd").await.unwrap(), 403, "INVALID_PATH").await;
    // An absolute link is read inside the root: there is no /etc in this sandbox.
    expect_error(get("abs-etc/passwd").await.unwrap(), 404, "FILE_NOT_FOUND").await;
    // A relative link climbing out is refused.
    expect_error(get("rel-etc/passwd").await.unwrap(), 403, "INVALID_PATH").await;
    // Same rules for info, listing and upload.
    let info = agent
        .client
        .get(agent.url("/files/info?path=rel-etc/passwd"))
        .send()
        .await
        .unwrap();
    expect_error(info, 403, "INVALID_PATH").await;
    let list = agent
        .client
        .get(agent.url("/directories/list?path=/workspace/abs-etc"))
        .send()
        .await
        .unwrap();
    expect_error(list, 400, "INVALID_PATH").await;

    let resp = upload(&agent, &[("rel-etc/evil.txt", b"x")]).await;
    assert_eq!(resp.status(), 403);
    let resp = upload(&agent, &[("abs-etc/inside.txt", b"x")]).await;
    assert_eq!(resp.status(), 200);
    // Landed in the sandbox's own /etc, not the host's.
    assert_eq!(std::fs::read(agent.host("/etc/inside.txt")).unwrap(), b"x");
    assert!(!std::path::Path::new("/etc/inside.txt").exists());

    // Reported paths are sandbox paths, never host paths.
    let info: Value = agent
        .client
        .get(agent.url("/files/info?path=abs-etc/inside.txt"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["abs-etc/inside.txt"]["path"], "/etc/inside.txt");
}

#[tokio::test]
async fn info_reports_missing_paths_and_symlinks() {
    let agent = start().await;
    let resp = agent
        .client
        .get(agent.url("/files/info?path=/workspace/none"))
        .send()
        .await
        .unwrap();
    expect_error(resp, 404, "FILE_NOT_FOUND").await;

    let empty: Value = agent
        .client
        .get(agent.url("/files/info"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(empty, json!({}));

    std::os::unix::fs::symlink("target", agent.host("/workspace/link")).unwrap();
    let info: Value = agent
        .client
        .get(agent.url("/files/info?path=/workspace/link&path=/workspace"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["/workspace/link"]["type"], "symlink");
    assert_eq!(info["/workspace"]["type"], "directory");
}

#[tokio::test]
async fn malformed_json_bodies_are_400() {
    let agent = start().await;
    for route in [
        "/files/permissions",
        "/files/mv",
        "/files/replace",
        "/directories",
    ] {
        let resp = agent
            .client
            .post(agent.url(route))
            .header("content-type", "application/json")
            .body("{\"oops\": ")
            .send()
            .await
            .unwrap();
        expect_error(resp, 400, "INVALID_REQUEST_BODY").await;
        let wrong_shape = agent
            .client
            .post(agent.url(route))
            .json(&json!(42))
            .send()
            .await
            .unwrap();
        expect_error(wrong_shape, 400, "INVALID_REQUEST_BODY").await;
        let no_type = agent
            .client
            .post(agent.url(route))
            .body("{}")
            .send()
            .await
            .unwrap();
        expect_error(no_type, 400, "INVALID_REQUEST_BODY").await;
    }
    // JSON bodies are capped (uploads are not): 11 MiB of JSON is refused in the
    // error shape, not with axum's plain-text rejection.
    let huge = format!(
        "{{\"/workspace/x\": {{\"mode\": 644, \"pad\": \"{}\"}}}}",
        "a".repeat(11 << 20)
    );
    let resp = agent
        .client
        .post(agent.url("/files/permissions"))
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .unwrap();
    expect_error(resp, 413, "INVALID_REQUEST_BODY").await;
}

#[tokio::test]
async fn permissions_change_mode_and_validate_input() {
    let agent = start().await;
    agent.write("/workspace/p.txt", b"p");
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .map(|u| u.name)
        .unwrap_or_else(|| nix::unistd::getuid().to_string());
    let resp = agent
        .client
        .post(agent.url("/files/permissions"))
        .json(&json!({"/workspace/p.txt": {"mode": 640, "owner": me}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let mode = std::fs::metadata(agent.host("/workspace/p.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);

    let resp = agent
        .client
        .post(agent.url("/files/permissions"))
        .json(&json!({"/workspace/p.txt": {"mode": 999}}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "INVALID_REQUEST_BODY").await;
    let resp = agent
        .client
        .post(agent.url("/files/permissions"))
        .json(&json!({"/workspace/p.txt": {"mode": 644, "owner": "no-such-user-xyz"}}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "INVALID_REQUEST_BODY").await;
    // The rejected batch changed nothing.
    let mode = std::fs::metadata(agent.host("/workspace/p.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);

    let resp = agent
        .client
        .post(agent.url("/files/permissions"))
        .json(&json!({"/workspace/missing": {"mode": 644}}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 404, "FILE_NOT_FOUND").await;
}

#[tokio::test]
async fn move_renames_and_creates_parents() {
    let agent = start().await;
    agent.write("/workspace/m.txt", b"move me");
    let resp = agent
        .client
        .post(agent.url("/files/mv"))
        .json(&json!([{"src": "/workspace/m.txt", "dest": "/workspace/x/y/moved.txt"}]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(!agent.host("/workspace/m.txt").exists());
    assert_eq!(
        std::fs::read(agent.host("/workspace/x/y/moved.txt")).unwrap(),
        b"move me"
    );
    let resp = agent
        .client
        .post(agent.url("/files/mv"))
        .json(&json!([{"src": "/workspace/m.txt", "dest": "/workspace/z"}]))
        .send()
        .await
        .unwrap();
    expect_error(resp, 404, "FILE_NOT_FOUND").await;
    let resp = agent
        .client
        .post(agent.url("/files/mv"))
        .json(&json!([{"src": "/workspace/x/y/moved.txt", "dest": "../../../../out"}]))
        .send()
        .await
        .unwrap();
    expect_error(resp, 403, "INVALID_PATH").await;
}

#[tokio::test]
async fn search_matches_names_and_paths() {
    let agent = start().await;
    for p in [
        "s/a.txt",
        "s/b.rs",
        "s/sub/c.txt",
        "s/sub/deeper/d.txt",
        "s/sub/e.md",
    ] {
        agent.write(&format!("/workspace/{p}"), b"x");
    }
    let search = |q: &[(&str, &str)]| agent.client.get(agent.url("/files/search")).query(q).send();
    let paths = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    let txt: Value = search(&[("path", "/workspace/s"), ("pattern", "*.txt")])
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        paths(txt),
        [
            "/workspace/s/a.txt",
            "/workspace/s/sub/c.txt",
            "/workspace/s/sub/deeper/d.txt"
        ]
    );
    let all: Value = search(&[("path", "s")])
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(paths(all.clone()).len(), 5);
    assert!(all.as_array().unwrap().iter().all(|e| e["type"] == "file"));
    let by_path: Value = search(&[("path", "s"), ("pattern", "sub/*.txt")])
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(paths(by_path), ["/workspace/s/sub/c.txt"]);

    expect_error(
        search(&[("path", "/workspace/none")]).await.unwrap(),
        404,
        "FILE_NOT_FOUND",
    )
    .await;
    expect_error(
        search(&[("path", "s"), ("pattern", "[")]).await.unwrap(),
        400,
        "INVALID_REQUEST_BODY",
    )
    .await;
    expect_error(search(&[]).await.unwrap(), 400, "MISSING_QUERY").await;
}

#[tokio::test]
async fn replace_rewrites_in_place_and_counts() {
    let agent = start().await;
    agent.write("/workspace/r.txt", b"foo bar foo baz foo");
    agent.write("/workspace/q.txt", b"nothing here");
    let resp = agent
        .client
        .post(agent.url("/files/replace?verbose=true"))
        .json(&json!({
            "/workspace/r.txt": {"old": "foo", "new": "qux"},
            "q.txt": {"old": "zzz", "new": "y"}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["/workspace/r.txt"]["replacedCount"], 3);
    assert_eq!(v["q.txt"]["replacedCount"], 0);
    assert_eq!(
        std::fs::read(agent.host("/workspace/r.txt")).unwrap(),
        b"qux bar qux baz qux"
    );

    let quiet = agent
        .client
        .post(agent.url("/files/replace"))
        .json(&json!({"/workspace/r.txt": {"old": "qux", "new": ""}}))
        .send()
        .await
        .unwrap();
    assert_eq!(quiet.status(), 200);
    assert!(quiet.bytes().await.unwrap().is_empty());
    assert_eq!(
        std::fs::read(agent.host("/workspace/r.txt")).unwrap(),
        b" bar  baz "
    );

    let resp = agent
        .client
        .post(agent.url("/files/replace"))
        .json(&json!({"/workspace/r.txt": {"old": "", "new": "x"}}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "INVALID_REQUEST_BODY").await;
}

#[tokio::test]
async fn directories_create_list_and_delete() {
    let agent = start().await;
    let resp = agent
        .client
        .post(agent.url("/directories"))
        .json(&json!({"/workspace/t/b/deep": {"mode": 700}, "/workspace/t/a": {"mode": 0}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mode = std::fs::metadata(agent.host("/workspace/t/b/deep"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    agent.write("/workspace/t/c.txt", b"c");
    agent.write("/workspace/t/a/inner.txt", b"i");
    std::os::unix::fs::symlink("/workspace/t/b", agent.host("/workspace/t/link")).unwrap();

    let list = |q: &str| {
        agent
            .client
            .get(agent.url(&format!("/directories/list?{q}")))
            .send()
    };
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    let one: Value = list("path=/workspace/t")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        names(&one),
        [
            "/workspace/t/a",
            "/workspace/t/b",
            "/workspace/t/c.txt",
            "/workspace/t/link"
        ]
    );
    assert_eq!(one[3]["type"], "symlink");
    let zero: Value = list("path=/workspace/t&depth=0")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(names(&zero), names(&one));
    let two: Value = list("path=/workspace/t&depth=2")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        names(&two),
        [
            "/workspace/t/a",
            "/workspace/t/a/inner.txt",
            "/workspace/t/b",
            "/workspace/t/b/deep",
            "/workspace/t/c.txt",
            "/workspace/t/link"
        ]
    );
    expect_error(
        list("path=/workspace/t/link").await.unwrap(),
        400,
        "INVALID_PATH",
    )
    .await;
    expect_error(
        list("path=/workspace/t/c.txt").await.unwrap(),
        400,
        "INVALID_PATH",
    )
    .await;
    expect_error(
        list("path=/workspace/none").await.unwrap(),
        404,
        "FILE_NOT_FOUND",
    )
    .await;
    expect_error(
        list("path=/workspace/t&depth=-1").await.unwrap(),
        400,
        "INVALID_REQUEST_BODY",
    )
    .await;

    // DELETE /files removes files and links but not directories.
    let resp =
        agent
            .client
            .delete(agent.url(
                "/files?path=/workspace/t/c.txt&path=/workspace/t/link&path=/workspace/t/gone",
            ))
            .send()
            .await
            .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(!agent.host("/workspace/t/c.txt").exists());
    assert!(
        agent.host("/workspace/t/b").exists(),
        "link target must survive"
    );
    let resp = agent
        .client
        .delete(agent.url("/files?path=/workspace/t/a"))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "INVALID_PATH").await;

    let resp = agent
        .client
        .delete(agent.url("/directories?path=/workspace/t/a&path=/workspace/t/b"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(!agent.host("/workspace/t/a").exists());
    assert!(!agent.host("/workspace/t/b").exists());
    let resp = agent
        .client
        .delete(agent.url("/directories?path=/"))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "INVALID_PATH").await;
    let resp = agent
        .client
        .delete(agent.url("/directories"))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "MISSING_QUERY").await;
}

#[tokio::test]
async fn routes_table_lists_every_file_route() {
    let table = opensandbox_agent::routes_table();
    for row in opensandbox_agent::files::ROUTES
        .iter()
        .chain(opensandbox_agent::metrics::ROUTES)
    {
        assert!(table.contains(row), "{row:?}");
    }
    // Each row is really served (anything but the router's fallback 404).
    let agent = start().await;
    for (method, path) in opensandbox_agent::files::ROUTES {
        if *path == "/metrics/watch" {
            continue;
        }
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let resp = agent
            .client
            .request(method, agent.url(path))
            .send()
            .await
            .unwrap();
        let body = resp.text().await.unwrap();
        assert!(!body.contains("ROUTE_NOT_FOUND"), "{path}: {body}");
    }
}

/// Regression: a refused request (405, 404) is answered only after its body has been
/// read. The agent used to answer and close while the client was still sending the
/// body, and the server's proxy, failing to write it (EPIPE), turned a 405 into a 502.
#[tokio::test]
async fn refused_requests_are_answered_after_their_body() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let agent = start().await;
    let addr = agent.base.trim_start_matches("http://").to_string();
    for (method, path, status) in [("PATCH", "/pty", "405"), ("POST", "/no/such/route", "404")] {
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let body = vec![b'x'; 200_000];
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        // The whole body goes through: nobody closed the connection under us.
        tcp.write_all(&body).await.unwrap();
        let mut answer = Vec::new();
        tcp.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{method} {path}: {answer}"
        );
    }
}

/// Regression: an upload refused before its file part was read (here its destination's
/// parent is a file; in conformance, a user's write to a root-only file) is answered
/// only after the rest of its body. The agent answered and closed with the body unread,
/// the connection was reset, and through the server's proxy a 403 became a 502.
#[tokio::test]
async fn a_refused_upload_is_answered_after_its_body() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let agent = start().await;
    agent.write("/blocker", b"a file, not a directory");
    let addr = agent.base.trim_start_matches("http://").to_string();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let first =
        "--XYZ\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n\
                 Content-Type: application/json\r\n\r\n{\"path\":\"/blocker/f.txt\"}\r\n\
                 --XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.txt\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n";
    let data = vec![b'x'; 400_000];
    let last = "\r\n--XYZ--\r\n";
    let head = format!(
        "POST /files/upload HTTP/1.1\r\nHost: x\r\n\
         Content-Type: multipart/form-data; boundary=XYZ\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        first.len() + data.len() + last.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(first.as_bytes()).await.unwrap();
    tcp.write_all(&data[..1000]).await.unwrap();
    // The agent refuses the destination now, with most of the body still to come.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    tcp.write_all(&data[1000..]).await.unwrap();
    tcp.write_all(last.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer)
        .await
        .expect("the connection was reset instead of answered");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 4") || answer.starts_with("HTTP/1.1 5"),
        "{answer}"
    );
    assert!(answer.contains("\"code\""), "{answer}");
    assert!(!agent.host("/blocker/f.txt").exists());
}
