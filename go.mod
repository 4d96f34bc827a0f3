module github.com/auditguard/auditguard

go 1.26.5
