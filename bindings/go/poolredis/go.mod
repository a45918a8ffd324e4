module example.invalid/opensandbox-sdk/go/poolredis

go 1.21

require (
	github.com/alibaba/OpenSandbox/sdks/sandbox/go v1.0.2
	github.com/redis/go-redis/v9 v9.17.3
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
)

// The SDK is this checkout's module (bindings/go), under the official import path so
// that the store's types are the ones of a program that imports that path.
replace github.com/alibaba/OpenSandbox/sdks/sandbox/go => ../
