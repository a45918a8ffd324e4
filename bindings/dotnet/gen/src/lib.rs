//! Generator of the .NET P/Invoke declarations (`bindings/dotnet/src/Native/NativeMethods.g.cs`).
//!
//! The build script runs csbindgen over bindings/ffi's Rust source; this crate exposes the
//! result as [`GENERATED`]. The tests keep the committed file honest:
//! - `generated_file_is_fresh` fails when the committed file differs from a fresh run
//!   (set `OPENSANDBOX_DOTNET_REGEN=1` to rewrite it instead);
//! - `every_header_function_is_declared` fails when csbindgen silently skipped an export
//!   of the C header (e.g. `#[unsafe(no_mangle)]`, macro-generated functions).

/// The C# source csbindgen produced from bindings/ffi in this build.
pub const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/NativeMethods.g.cs"));

/// Path of the committed copy, relative to this crate's manifest directory.
pub const COMMITTED_PATH: &str = "../src/Native/NativeMethods.g.cs";

/// Names of the functions declared with `[DllImport]` in a csbindgen output.
pub fn declared_functions(cs: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in cs.lines() {
        let line = line.trim();
        if !line.starts_with("internal static extern ") {
            continue;
        }
        if let Some(open) = line.find('(') {
            if let Some(name) = line[..open].split_whitespace().last() {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// Names of the functions a C header declares (`osb_*` identifiers followed by `(`).
pub fn header_functions(header: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_comment = false;
    for line in header.lines() {
        let mut line = line.trim();
        if in_comment {
            match line.find("*/") {
                Some(end) => {
                    in_comment = false;
                    line = &line[end + 2..];
                }
                None => continue,
            }
        }
        if line.starts_with("/*") {
            if !line.contains("*/") {
                in_comment = true;
            }
            continue;
        }
        if line.starts_with('*')
            || line.starts_with("//")
            || line.starts_with('#')
            || line.contains("typedef")
        {
            continue;
        }
        if let Some(open) = line.find("osb_") {
            let rest = &line[open..];
            if let Some(paren) = rest.find('(') {
                let name = &rest[..paren];
                if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    names.push(name.to_string());
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn manifest_dir() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn generated_file_is_fresh() {
        let path = manifest_dir().join(COMMITTED_PATH);
        if std::env::var_os("OPENSANDBOX_DOTNET_REGEN").is_some() {
            std::fs::write(&path, GENERATED).expect("write NativeMethods.g.cs");
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == GENERATED,
            "{} is stale: run `OPENSANDBOX_DOTNET_REGEN=1 cargo test -p opensandbox-dotnet-gen` and commit it",
            path.display()
        );
    }

    #[test]
    fn every_header_function_is_declared() {
        let header =
            std::fs::read_to_string(manifest_dir().join("../../ffi/include/opensandbox.h"))
                .expect("bindings/ffi/include/opensandbox.h");
        let expected = header_functions(&header);
        assert!(
            expected.len() > 10,
            "parsed too few functions from the header: {expected:?}"
        );
        let declared = declared_functions(GENERATED);
        let missing: Vec<_> = expected.iter().filter(|f| !declared.contains(f)).collect();
        assert!(missing.is_empty(), "csbindgen did not declare {missing:?}");
    }

    #[test]
    fn unsafe_no_mangle_is_seen() {
        // csbindgen alone skips `#[unsafe(no_mangle)]`; the build script rewrites it.
        assert!(declared_functions(GENERATED)
            .iter()
            .any(|f| f == "osb_version"));
    }

    #[test]
    fn parsers_read_declarations() {
        let cs = "        internal static extern byte* osb_version();\n        internal static extern void osb_x(int a);";
        assert_eq!(declared_functions(cs), vec!["osb_version", "osb_x"]);
        let h = "/* c\n * osb_no(\n */\nconst char *osb_version(void);\nvoid osb_string_free(char *s);\ntypedef void (*OsbCallback)(uintptr_t);";
        assert_eq!(header_functions(h), vec!["osb_string_free", "osb_version"]);
    }
}
