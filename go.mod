module github.com/auditguard/auditguard

go 1.26.5

require (
	github.com/spf13/afero v1.15.0
	golang.org/x/sys v0.49.0
)

require golang.org/x/text v0.28.0 // indirect
