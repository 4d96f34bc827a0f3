module github.com/auditguard/auditguard/tools

go 1.26.5

tool github.com/google/capslock/cmd/capslock

require (
	github.com/fatih/color v1.19.0 // indirect
	github.com/google/capslock v0.3.2 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	golang.org/x/mod v0.34.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
	golang.org/x/tools v0.43.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
