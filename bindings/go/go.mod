module example.invalid/opensandbox-sdk/go

go 1.21
