# The C ABI (bindings/ffi): Rust tests through the extern "C" functions against the
# real server, the header drift check, and a valgrind leak check of a C program.
FFI_STATIC := $(CARGO_TARGET_DIR)/debug/libopensandbox_ffi.a

.PHONY: setup-ffi build-ffi test-ffi bench-ffi

setup-ffi:
	@command -v gcc >/dev/null && command -v valgrind >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc valgrind >/dev/null; }

build-ffi: setup-ffi
	$(CARGO) build -p opensandbox-ffi

test-ffi: build build-ffi
	OPENSANDBOX_SERVER_BIN="$(SERVER_DEBUG)" $(CARGO) test -p opensandbox-ffi
	bindings/ffi/tests/leakcheck.sh "$(SERVER_DEBUG)" "$(FFI_STATIC)" .work/ffi

bench-ffi: bench-go

BINDING_TESTS += test-ffi
