module opensandbox-conformance-go

go 1.21

require (
	github.com/alibaba/OpenSandbox/sdks/sandbox/go v1.0.2
	github.com/alibaba/OpenSandbox/sdks/sandbox/go/poolredis v0.0.0
	github.com/redis/go-redis/v9 v9.17.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)

// The SDK (bindings/go) and its Redis store (bindings/go/poolredis) under the official
// import paths, as a program written for the official module imports them: the store
// implements the PoolStateStore of that path.
replace github.com/alibaba/OpenSandbox/sdks/sandbox/go => ../../../bindings/go

replace github.com/alibaba/OpenSandbox/sdks/sandbox/go/poolredis => ../../../bindings/go/poolredis
