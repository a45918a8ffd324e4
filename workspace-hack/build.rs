// Empty: it only makes cargo resolve the build-dependencies (see Cargo.toml).
fn main() {}
