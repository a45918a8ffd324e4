//! No code: this crate only pins dependency features (see its Cargo.toml).
