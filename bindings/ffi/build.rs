//! Generates the C header from this crate's source into `$OUT_DIR/opensandbox.h`.
//! `tests/header.rs` compares it with the committed `include/opensandbox.h` (and
//! rewrites that under `OPENSANDBOX_BLESS=1`).
//!
//! cbindgen runs here, as a build dependency, rather than in the test as a
//! dev-dependency: build dependencies compile for the host without optimisation and
//! share `syn` with the proc-macros, while a dev-dependency compiles cbindgen and a
//! second, full-featured `syn` at the dependencies' opt-level (about half a minute of a
//! fresh `make test`). `with_src` parses `src/lib.rs` and the modules it declares,
//! without running `cargo metadata` from inside the build.

use std::env;
use std::path::PathBuf;

fn main() {
    let Some(manifest) = env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        panic!("cargo sets CARGO_MANIFEST_DIR for build scripts");
    };
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("cargo sets OUT_DIR for build scripts");
    };
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let config = cbindgen::Config::from_file(manifest.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("bindings/ffi/cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_src(manifest.join("src/lib.rs"))
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen over bindings/ffi/src: {e}"));
    bindings.write_to_file(out.join("opensandbox.h"));
}
