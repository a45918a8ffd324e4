# The Go module (bindings/go): cgo over the C ABI's static library. GOFLAGS and the Go
# caches are the user's defaults (GOPATH/GOMODCACHE); the module has no dependencies.
# bindings/go/poolredis is a module of its own (like the official SDK's), the only one
# with a dependency (go-redis, from the Go module proxy); it imports the SDK under the
# official path, replaced by ../.
GO ?= go
GO_DIR := bindings/go
GO_DRIVER := .work/go/bin/opensandbox-conformance-go
GO_BENCH := .work/go/bin/opensandbox-go-bench
# Go does not hash the static library named in #cgo LDFLAGS: stamping the link with
# its mtime and size makes every rebuilt library relink the binaries that use it.
GO_STAMP = -ldflags="-X example.invalid/opensandbox-sdk/go.nativeStamp=$$(stat -c %Y-%s $(1) 2>/dev/null)"
GO_STAMP_OFFICIAL = -ldflags="-X github.com/alibaba/OpenSandbox/sdks/sandbox/go.nativeStamp=$$(stat -c %Y-%s $(1) 2>/dev/null)"

.PHONY: setup-go build-go test-go bench-go bench-prepare-go

setup-go: setup-ffi
	@command -v $(GO) >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null; }
	@$(GO) version
	cd $(GO_DIR)/poolredis && $(GO) mod download

# Everything the conformance driver needs: the static library, then the driver binary.
# The driver imports the SDK and poolredis under the official paths (replaced by this
# checkout, as a user's program would), so the pool cases use the Redis store; go-redis
# comes from the module cache setup-go fills.
build-go: setup-go build-ffi
	mkdir -p .work/go/bin
	cd conformance/drivers/go && $(GO) build $(call GO_STAMP_OFFICIAL,$(FFI_STATIC)) -o $(CURDIR)/$(GO_DRIVER) .

test-go: build build-go
	@test -z "$$(gofmt -l $(GO_DIR) conformance/drivers/go)" || { gofmt -l $(GO_DIR) conformance/drivers/go; echo "gofmt: files above need formatting"; exit 1; }
	cd $(GO_DIR) && $(GO) vet ./...
	cd conformance/drivers/go && $(GO) vet ./...
	cd $(GO_DIR)/poolredis && $(GO) vet ./...
	scripts/with-server.sh "$(SERVER_DEBUG)" bash -c 'cd $(GO_DIR) && GODEBUG=cgocheck=1 $(GO) test $(call GO_STAMP,$(FFI_STATIC)) -race -count=1 -v ./... 2>&1 | grep -E "^(---|ok|FAIL|PASS|panic)|_test.go"; exit $${PIPESTATUS[0]}'
	scripts/with-server.sh "$(SERVER_DEBUG)" bash -c 'cd $(GO_DIR)/poolredis && GODEBUG=cgocheck=1 $(GO) test $(call GO_STAMP_OFFICIAL,$(FFI_STATIC)) -race -count=1 -v ./... 2>&1 | grep -E "^(---|ok|FAIL|PASS|panic)|_test.go"; exit $${PIPESTATUS[0]}'
	scripts/with-server.sh "$(SERVER_DEBUG)" bash -c 'cd $(GO_DIR) && GOEXPERIMENT=cgocheck2 $(GO) test $(call GO_STAMP,$(FFI_STATIC)) -count=1 .'
	$(GO_DIR)/tests/packaging.sh "$(SERVER_DEBUG)" .work/go/pkgtest

# Ours vs a net/http client written the official SDK's way, release builds, one run.
# `make bench` runs bindings/go/bench/bench.sh (this binary) after this.
bench-prepare-go: setup-go build-release
	mkdir -p .work/go/bin
	cd $(GO_DIR) && $(GO) build -tags opensandbox_release $(call GO_STAMP,$(CARGO_TARGET_DIR)/release/libopensandbox_ffi.a) -o $(CURDIR)/$(GO_BENCH) ./bench

bench-go: bench-prepare-go
	scripts/with-server.sh "$(SERVER_RELEASE)" python3 scripts/bench/run.py go

BENCH_LANGS += go
BINDING_TESTS += test-go
SETUP_ALL += setup-go
DRIVER_BUILDS += build-go
