//! Runs csbindgen over bindings/ffi's Rust source and writes the C# P/Invoke declarations
//! to `$OUT_DIR/NativeMethods.g.cs`. The committed copy lives in
//! bindings/dotnet/src/Native/NativeMethods.g.cs; `tests::generated_file_is_fresh` (lib.rs)
//! fails when the two differ, and `OPENSANDBOX_DOTNET_REGEN=1 cargo test -p
//! opensandbox-dotnet-gen` rewrites the committed copy.
//!
//! csbindgen parses files one by one, without module resolution, and recognises exported
//! functions only by a plain `#[no_mangle]` attribute: `#[unsafe(no_mangle)]` (required by
//! edition 2024, allowed since Rust 1.82) is skipped silently (csbindgen #102/#117). So each
//! source file is copied to OUT_DIR with `#[unsafe(no_mangle)]` rewritten to `#[no_mangle]`
//! first, and the crate's own test counts the exports against the header.

use std::path::{Path, PathBuf};
use std::{env, fs};

/// A build script reports failure by returning the error: cargo prints it and stops.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let ffi_src = env::var_os("OPENSANDBOX_FFI_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../ffi/src"));
    println!("cargo:rerun-if-env-changed=OPENSANDBOX_FFI_SRC");
    println!("cargo:rerun-if-changed={}", ffi_src.display());
    let out = PathBuf::from(env::var("OUT_DIR")?);
    let staged = out.join("ffi-src");
    let _ = fs::remove_dir_all(&staged);
    fs::create_dir_all(&staged).map_err(|e| format!("creating {}: {e}", staged.display()))?;

    let mut files = Vec::new();
    collect_rs(&ffi_src, &mut files);
    files.sort();
    let mut builder = csbindgen::Builder::default();
    for (i, file) in files.iter().enumerate() {
        println!("cargo:rerun-if-changed={}", file.display());
        let text = fs::read_to_string(file).unwrap_or_default();
        let text = text.replace("#[unsafe(no_mangle)]", "#[no_mangle]");
        let staged_file = staged.join(format!("{i:03}.rs"));
        fs::write(&staged_file, text)
            .map_err(|e| format!("writing {}: {e}", staged_file.display()))?;
        builder = builder.input_extern_file(staged_file);
    }
    let target = out.join("NativeMethods.g.cs");
    builder
        .csharp_dll_name("opensandbox_ffi")
        .csharp_namespace("OpenSandbox.Native")
        .csharp_class_name("NativeMethods")
        .csharp_class_accessibility("internal")
        // mcs (C# 7) knows neither `delegate* unmanaged` nor nint/nuint.
        .csharp_use_function_pointer(false)
        .csharp_use_nint_types(false)
        // bindings/ffi spells some lengths `libc::size_t`, which csbindgen leaves as is.
        .csharp_type_rename(|name| match name.as_str() {
            "size_t" => "System.UIntPtr".to_string(),
            _ => name,
        })
        // Only the public OSB_* constants (internal ones like UPLOAD_QUEUE: usize are not valid C# consts).
        .csharp_generate_const_filter(|name| name.starts_with("OSB_"))
        .generate_csharp_file(&target)
        .map_err(|e| format!("csbindgen over {}: {e}", ffi_src.display()))?;
    Ok(())
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
