module opensandbox-conformance-go

go 1.21

require example.invalid/opensandbox-sdk/go v0.0.0

replace example.invalid/opensandbox-sdk/go => ../../../bindings/go
