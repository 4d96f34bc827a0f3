GO ?= go
PKGS := ./...
FUZZTIME ?= 10s
BENCHTIME ?= 1s

.PHONY: test bench bench-pkg fuzz demo fmt vet reach

## test: formatting check, go vet, and every test under the race detector
## (procguard's real sandboxes take about 7 minutes under -race on a
## 2-core machine, near go test's default 10-minute bound when loaded)
test: fmt vet
	$(GO) test -race -count=1 -timeout=20m $(PKGS)

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## bench: one table of every facade call against the raw call it wraps,
## measured interleaved (docs/bench.md); BENCHTIME is the time per row,
## BENCH_ONLY picks groups (fs,policy,net,exec)
BENCH_ONLY ?=
bench:
	$(GO) run ./internal/benchtable -benchtime=$(BENCHTIME) $(if $(BENCH_ONLY),-only=$(BENCH_ONLY))

## bench-pkg: every package's go test benchmarks with allocations
bench-pkg:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) $(PKGS)

## fuzz: each fuzz target for FUZZTIME
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for t in $$($(GO) test -list='^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$t"; \
			$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
		done; \
	done

## demo: the scripted demonstration
demo:
	$(GO) run ./cmd/auditdemo

## reach: capslock (pinned in tools/go.mod) proves the in-process generated
## code of cmd/auditdemo reaches files, programs and the network only
## through the facades, and that the check sees the raw reach of the
## generated program auditdemo runs sandboxed (docs/reach.md).
## REACH_PKGS picks other packages to check.
TOOLBIN ?= $(CURDIR)/.bin
REACH_PKGS ?= ./cmd/auditdemo/gencode
reach:
	cd tools && $(GO) build -o $(TOOLBIN)/capslock github.com/google/capslock/cmd/capslock && $(GO) build -o $(TOOLBIN)/reach ./reach
	$(TOOLBIN)/reach -capslock $(TOOLBIN)/capslock -map tools/reach.cm $(REACH_PKGS)
	$(TOOLBIN)/reach -capslock $(TOOLBIN)/capslock -map tools/reach.cm -expect FILES,EXEC,NETWORK ./cmd/auditdemo/eager
