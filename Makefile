# kubectl-finalize. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

MODULE   := github.com/kubectl-finalize/kubectl-finalize
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS  := -s -w -X $(MODULE)/pkg/version.version=$(VERSION)
BIN      := bin
GOTOOLS  := go tool -modfile=hack/tools/go.mod
RELEASER := go tool -modfile=hack/release/go.mod goreleaser
TOOLBIN  := $(CURDIR)/$(BIN)/tools
# The control plane binaries (etcd, kube-apiserver, kube-controller-manager, kubectl),
# built from the Go module proxy into a cache outside the repository.
K8S_BINS  = $(shell test/infra/k8s-bins/build.sh)
# Every build and test here is static and -trimpath, as the release (.goreleaser.yaml) and
# the control plane (test/infra/k8s-bins) are: the packages they share then compile once
# on a cold machine, not once per configuration. The race detector needs cgo: test-unit
# turns it back on for itself.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(shell go env GOFLAGS)) -trimpath)
# Integration packages each start a control plane, and mostly wait on it: three at a
# time on two cores take the test packages from about 10:30 to 8:30. At three, the
# namespace controller of test/doctor's conversion-webhook test once took more than the
# 3 minutes that test then allowed; it now has one deadline of 8 minutes for its reports
# (docs/development.md, "Decisions").
INTEGRATION_PARALLEL ?= 3
# Within a package, the tests that call t.Parallel (test/forcedelete's that wait out a
# Lease watch) run four at a time, not GOMAXPROCS (2) at a time: they mostly wait.
TEST_PARALLEL ?= 4
DEMO_DIR ?= .demo

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Build

.PHONY: build
build: ## Build bin/kubectl-finalize and bin/kubectl_complete-finalize.
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-finalize ./cmd/kubectl-finalize
	install -m 0755 completion/kubectl_complete-finalize $(BIN)/kubectl_complete-finalize

.PHONY: install
install: ## Install kubectl-finalize and its completion script into GOBIN.
	go install -trimpath -ldflags '$(LDFLAGS)' ./cmd/kubectl-finalize
	install -m 0755 completion/kubectl_complete-finalize "$$(go env GOBIN || true)$${GOBIN:-$$(go env GOPATH)/bin}/kubectl_complete-finalize" 2>/dev/null || \
		install -m 0755 completion/kubectl_complete-finalize "$$(go env GOPATH)/bin/kubectl_complete-finalize"

.PHONY: helm
helm: ## Build helm (pinned in hack/helm/go.mod; about 3 minutes cold, instant when cached), which test/helm and test/deploy/helm run.
	@hack/helm/build.sh >/dev/null

.PHONY: helm-lint
helm-lint: helm ## helm lint --strict the chart, both shapes.
	@for shape in cronjob deployment; do "$$(hack/helm/build.sh)/helm" lint --strict docs/deploy/helm/kubectl-finalize \
		-f docs/deploy/helm/kubectl-finalize/ci/$$shape-values.yaml || exit 1; done

.PHONY: crossplane-bins
crossplane-bins: ## Build the real provider-kubernetes (test/infra/crossplane; about 2.5 minutes cold, instant when cached).
	@test/infra/crossplane/build.sh >/dev/null

.PHONY: k8s-bins
k8s-bins: ## Build the test control plane (about 5 minutes cold, instant when cached).
	@test/infra/k8s-bins/build.sh

##@ Test

.PHONY: test
test: verify lint test-unit test-packages test-short-runs ## Everything CI runs: verify, lint, unit, integration and deploy tests.

.PHONY: test-unit
test-unit: ## Unit tests (fakes only), with the race detector.
	CGO_ENABLED=1 go test -race -count=1 ./cmd/... ./pkg/... ./completion/... ./hack/...
	cd hack/image && CGO_ENABLED=1 go test -race -count=1 ./...

# The packages that start a node beside their control plane; test-deploy runs them.
NODE_PACKAGES := ./test/node ./test/deploy/...

.PHONY: test-integration
test-integration: ## Integration and end-to-end tests against a real control plane (the node's packages are test-deploy's, test/release is verify-release's).
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test -count=1 -p $(INTEGRATION_PARALLEL) -parallel $(TEST_PARALLEL) -timeout 30m \
		$$(go list ./test/... | grep -v -E '/test/(node|deploy|release)(/|$$)')

# The release image of the deploy tests: goreleaser's ko against a base built here and a
# registry on loopback (docs/releasing.md); built once, every node package imports it.
RELEASE_IMAGE := $(BIN)/release/image.tar

.PHONY: release-image
release-image: ## Build the release image (goreleaser + ko, a base built here, a registry on loopback) into bin/release/image.tar.
	cd hack/release && go test -count=1 ./internal/... && go run ./image -root $(CURDIR) -out $(CURDIR)/$(RELEASE_IMAGE)

.PHONY: test-deploy
test-deploy: release-image helm ## The shapes users run, on a real node: the release image, the CronJob and the Deployment as shipped, every policy shape on its RBAC (root; installs containerd and runc if missing).
	KUBECTL_FINALIZE_IMAGE="$(CURDIR)/$(RELEASE_IMAGE)" KUBEBUILDER_ASSETS="$(K8S_BINS)" \
		go test -count=1 -p $(INTEGRATION_PARALLEL) -parallel $(TEST_PARALLEL) -timeout 30m $(NODE_PACKAGES)

# The longest test packages (about a minute or more each, warm): make test starts them
# first, so that the packages at a time never end with one core idle behind a long one.
LONGEST_PACKAGES := ./test/doctor ./test/unreadable ./test/unreadable/gateoff ./test/deploy/cronjob ./test/deploy/policies ./test/node ./test/reconcile ./test/forcedelete ./test/pods/ready ./test/e2e

.PHONY: test-packages
test-packages: release-image helm crossplane-bins ## test-integration and test-deploy in one run, the longest packages first (make test).
	KUBECTL_FINALIZE_IMAGE="$(CURDIR)/$(RELEASE_IMAGE)" KUBEBUILDER_ASSETS="$(K8S_BINS)" \
		go test -count=1 -p $(INTEGRATION_PARALLEL) -parallel $(TEST_PARALLEL) -timeout 30m $(LONGEST_PACKAGES) \
		$$(go list ./test/... | grep -v -E '/test/release$$')

.PHONY: test-operators
test-operators: crossplane-bins ## The presets against the real operators: Crossplane's provider-kubernetes, built from the Go module proxy, against two control planes (#38; make test runs it too).
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test -count=1 -timeout 15m -v ./test/operators

.PHONY: test-node
test-node: ## The test node alone: kubelet, containerd and runc, kube-scheduler, pods on loopback (root; installs containerd and runc if missing).
	cd hack/image && go test -count=1 ./...
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test -count=1 -timeout 15m -v ./test/node

.PHONY: test-update
test-update: ## Refresh golden files.
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test -count=1 ./... -update

BENCH_OBJECTS  ?= 100000
BENCH_CRDS     ?= 250
BENCH_RUNS     ?= 3
BENCH_VARIANTS ?= floor,scan,doctor,shell,floor-nolimit,scan-nolimit,doctor-nolimit
BENCH_CR_MIN   ?= 1024
BENCH_CR_MAX   ?= 51200
BENCH_REMOVALS ?= 1000
BENCH_STUCK    ?= 0
BENCH_OPERATORS ?= 20

.PHONY: bench
bench: bench-cluster bench-mass-stuck bench-reconcile bench-go ## Every benchmark: the cluster (100k objects, 300 types), the same with 10,000 stuck at once, reconcile's removals per second, the hot paths.

.PHONY: bench-cluster
bench-cluster: ## Seed a cluster and compare scan, doctor, the listing floor and the shell idiom side by side.
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test ./test/bench -run '^$$' -bench . -benchtime $(BENCH_RUNS)x -timeout 180m \
		-bench.objects=$(BENCH_OBJECTS) -bench.crds=$(BENCH_CRDS) -bench.variants=$(BENCH_VARIANTS) \
		-bench.cr-min-bytes=$(BENCH_CR_MIN) -bench.cr-bytes=$(BENCH_CR_MAX) \
		-bench.stuck=$(BENCH_STUCK) -bench.stuck-operators=$(BENCH_OPERATORS)

.PHONY: bench-mass-stuck
bench-mass-stuck: ## The cluster benchmark with 10,000 objects stuck at once, held by 20 dead operators: scan, doctor and reconcile's plan of them (#36).
	@$(MAKE) --no-print-directory bench-cluster BENCH_STUCK=10000 BENCH_VARIANTS=floor,scan,doctor,reconcile

.PHONY: bench-300k
bench-300k: ## The cluster benchmark at 300,000 objects.
	@$(MAKE) --no-print-directory bench-cluster BENCH_OBJECTS=300000 BENCH_RUNS=1

.PHONY: bench-reconcile
bench-reconcile: ## Verified removals per second of one reconcile pass, against a 10 ms HTTPS provider.
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test ./test/reconcile -run '^$$' -bench VerifiedRemovals -benchtime 1x -timeout 30m \
		-bench.removals=$(BENCH_REMOVALS)

.PHONY: bench-go
bench-go: ## The Go benchmarks of the hot in-process paths (managedFields, owners, rules, rendering).
	go test -run '^$$' -bench . -benchmem ./pkg/...

.PHONY: test-short-runs
test-short-runs: ## test-bench-short and test-fuzz-short side by side, part of make test: the fuzzers use the core the benchmark's control plane leaves idle; neither times anything that fails.
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-bench-short test-fuzz-short

.PHONY: test-bench-short
test-bench-short: ## Short fixed-size runs of the benchmarks (3,000 objects, 20 CRDs; 100 removals), part of make test.
	@$(MAKE) --no-print-directory bench-cluster BENCH_OBJECTS=3000 BENCH_CRDS=20 BENCH_RUNS=1
	@$(MAKE) --no-print-directory bench-reconcile BENCH_REMOVALS=100
	go test -run '^$$' -bench . -benchtime 1x ./pkg/...

FUZZTIME ?= 10s
FUZZERS   = ./pkg/owner:FuzzWriters ./pkg/owner:FuzzSlimFields ./pkg/owner:FuzzControllerWrites ./pkg/policy:FuzzDecodeAndCompile ./pkg/provider:FuzzURLTemplate \
            ./pkg/provider:FuzzExecDecode ./pkg/doctor:FuzzGroupVersionsIn

# FUZZCACHE, when set, is the fuzz cache the runs start from and add to, in place of Go's
# (GOCACHE/fuzz, where every run adds the inputs it found interesting).
FUZZCACHE ?=

.PHONY: fuzz
fuzz: ## Run every fuzz test for FUZZTIME each (default 10s; a long run: FUZZTIME=10m).
	@for f in $(FUZZERS); do \
		pkg=$${f%%:*}; name=$${f##*:}; echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x $$pkg $(if $(FUZZCACHE),-test.fuzzcachedir=$(FUZZCACHE)) || exit 1; \
	done

CHAOS_ATTEMPTS ?= 2000
CHAOS_SEED     ?= 1

.PHONY: chaos
chaos: ## The chaos run: CHAOS_ATTEMPTS removal attempts (default 2000) against concurrent writers; make test runs 300.
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go test -count=1 -timeout 30m -run '^TestChaosNeverRemovesOnAGuess$$' -v ./test/stress \
		-chaos.attempts=$(CHAOS_ATTEMPTS) -chaos.seed=$(CHAOS_SEED) | grep -E '^(---|===|ok|FAIL|\s+chaos_test)'

# The short runs start from the seeds and testdata/fuzz alone, in a cache of their own, as
# on a fresh machine: Go's fuzz cache grows with every run (350 inputs for one fuzzer after
# a few weeks, 13 s of baseline coverage before the first new input), and a fixed-length
# run must not grow with it. make fuzz keeps using and growing Go's cache.
.PHONY: test-fuzz-short
test-fuzz-short: ## Every fuzz test for a short fixed length (10,000 inputs each, from the seeds alone), part of make test.
	@cache=$$(mktemp -d) && trap 'rm -rf "$$cache"' EXIT && $(MAKE) --no-print-directory fuzz FUZZTIME=10000x FUZZCACHE="$$cache"

##@ Quality

.PHONY: lint
lint: ## golangci-lint (pinned in hack/tools/go.mod).
	$(GOTOOLS) golangci-lint run ./...

.PHONY: fmt
fmt: ## Format the code.
	$(GOTOOLS) golangci-lint fmt ./...

.PHONY: generate
generate: ## Generate deepcopy functions of the API types.
	$(GOTOOLS) deepcopy-gen --output-file zz_generated.deepcopy.go --go-header-file /dev/null ./pkg/apis/...

.PHONY: docs
docs: ## Generate the command reference (docs/reference) and the demo captures (docs/demo, README).
	rm -rf docs/reference
	go run ./hack/docgen docs/reference
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go run ./hack/demo capture --out docs/demo --readme README.md

.PHONY: verify
verify: ## Fail if go.mod, formatting, generated code or docs are stale; check the release.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: run make fmt"; exit 1; }
	@$(MAKE) --no-print-directory verify-tidy
	go vet ./...
	go run ./hack/deadcode ./cmd/kubectl-finalize
	@$(MAKE) --no-print-directory generate && git diff --exit-code -- pkg/apis || { echo "generated code is stale: run make generate"; exit 1; }
	@tmp=$$(mktemp -d) && go run ./hack/docgen $$tmp && diff -ru docs/reference $$tmp || { echo "docs/reference is stale: run make docs"; exit 1; }
	KUBEBUILDER_ASSETS="$(K8S_BINS)" go run ./hack/demo capture --out docs/demo --readme README.md --check
	@$(MAKE) --no-print-directory verify-release RELEASE_PLATFORMS=host

# The modules whose go.mod and go.sum must be tidy. Their checks run at once: on a cold
# machine each one waits on the module proxy far more than on the CPU (one after the
# other, they took 9 to 16 minutes of a cold run).
TIDY_MODULES := . hack/tools test/infra/k8s-bins test/infra/cni test/infra/receivers hack/image hack/krew hack/helm test/infra/crossplane

.PHONY: verify-tidy
verify-tidy: ## Fail if the go.mod or go.sum of any module is not tidy (checked in parallel).
	@tmp=$$(mktemp -d); pids=(); \
	for m in $(TIDY_MODULES); do (cd $$m && exec go mod tidy -diff) >"$$tmp/$${m//\//_}.log" 2>&1 & pids+=("$$!:$$m"); done; \
	rc=0; for pm in "$${pids[@]}"; do m=$${pm#*:}; \
		if wait $${pm%%:*}; then echo "go mod tidy -diff: $$m is tidy"; \
		else echo "go mod tidy -diff: $$m is not tidy (run go mod tidy in $$m):"; cat "$$tmp/$${m//\//_}.log"; rc=1; fi; \
	done; rm -rf "$$tmp"; exit $$rc

# The platforms of the release snapshot: all six by default; `make verify` (so `make test`)
# builds this machine's alone, from a configuration hack/release/hostconfig derives from
# .goreleaser.yaml (goreleaser's release has no --single-target), and without the SBOMs:
# building syft takes 4.5 minutes on a cold machine, more than the host build itself.
RELEASE_PLATFORMS ?= all
COMMA := ,
RELEASE_HOST_CONFIG := $(BIN)/release/goreleaser.host.yaml

.PHONY: verify-release
verify-release: ## Check .goreleaser.yaml, build the snapshot (archives, SBOMs) of all six platforms into dist/, test it with krew (RELEASE_PLATFORMS=host: this machine's only, no SBOMs).
	@case "$(RELEASE_PLATFORMS)" in host|all) ;; *) echo "RELEASE_PLATFORMS=$(RELEASE_PLATFORMS): want host or all"; exit 1;; esac
	cd hack/release && go mod tidy -diff
	$(if $(filter all,$(RELEASE_PLATFORMS)),cd hack/sbom && go mod tidy -diff)
	$(if $(filter all,$(RELEASE_PLATFORMS)),go build -modfile=hack/sbom/go.mod -o $(TOOLBIN)/syft github.com/anchore/syft/cmd/syft)
	$(RELEASER) check
	cd hack/release && go test -count=1 ./hostconfig ./internal/... && go run ./hostconfig -in ../../.goreleaser.yaml -out $(CURDIR)/$(RELEASE_HOST_CONFIG)
	PATH="$(TOOLBIN):$$PATH" $(RELEASER) release --snapshot --clean --skip=ko$(if $(filter host,$(RELEASE_PLATFORMS)),$(COMMA)sbom) \
		--config $(if $(filter host,$(RELEASE_PLATFORMS)),$(RELEASE_HOST_CONFIG),.goreleaser.yaml)
	KUBECTL_FINALIZE_PLATFORMS=$(RELEASE_PLATFORMS) KUBECTL_FINALIZE_DIST="$(CURDIR)/dist" KUBEBUILDER_ASSETS="$(K8S_BINS)" \
		go test -count=1 -timeout 20m -v ./test/release

##@ Demo

.PHONY: demo
demo: build ## Start a local cluster seeded with stuck objects, and a demo cloud that verifies removals (needs no docker).
	go run ./hack/demo up --dir $(DEMO_DIR)

.PHONY: demo-down
demo-down: ## Stop the demo cluster and its cloud.
	go run ./hack/demo down --dir $(DEMO_DIR)

.PHONY: clean
clean: demo-down ## Remove build outputs and the demo cluster.
	rm -rf $(BIN) dist
