module github.com/auditguard/auditguard

go 1.26.5

require github.com/pelletier/go-toml/v2 v2.4.3
