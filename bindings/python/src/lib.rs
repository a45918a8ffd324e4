//! pyo3 extension module of the Python package opensandbox (skeleton: the owner of this crate fills it in).
