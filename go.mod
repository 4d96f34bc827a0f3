module github.com/auditguard/auditguard

go 1.26.5

require (
	golang.org/x/sys v0.49.0
	mvdan.cc/sh/v3 v3.14.1
)
