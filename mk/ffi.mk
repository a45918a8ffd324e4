# The C ABI (bindings/ffi): a valgrind leak check of a C program. Its Rust tests (the
# extern "C" functions against the real server, the header drift check) are part of
# `make test-rust`, which runs every crate's tests from the one workspace build.
FFI_STATIC := $(CARGO_TARGET_DIR)/debug/libopensandbox_ffi.a

.PHONY: setup-ffi build-ffi test-ffi bench-ffi

setup-ffi:
	@command -v gcc >/dev/null && command -v valgrind >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc valgrind >/dev/null; }

# The library comes from the one workspace build (`make build`); its Rust tests (the C
# API against the real server, the header drift check) run in `make test-rust`.
build-ffi: setup-ffi build

test-ffi: build-ffi
	bindings/ffi/tests/leakcheck.sh "$(SERVER_DEBUG)" "$(FFI_STATIC)" .work/ffi

bench-ffi: bench-go

BINDING_TESTS += test-ffi
SETUP_ALL += setup-ffi
