# Flotilla: a Kubernetes fleet platform. `make help` lists the targets.
SHELL := /usr/bin/env bash

K8S_VERSION     ?= v1.36.3
# The version the upgrade tests start from (a real node of it is replaced by one of K8S_VERSION).
UPGRADE_FROM    ?= v1.35.4
FLOTILLA_BIN_CACHE ?= $(HOME)/.cache/flotilla/bin
TOOLS_CACHE     ?= $(HOME)/.cache/flotilla/tools
CONTROLLER_GEN  := $(TOOLS_CACHE)/controller-gen-v0.21.0
GOLANGCI_LINT   := $(TOOLS_CACHE)/golangci-lint-v2.15.0
# clusterctl at the Cluster API version Flotilla embeds: the e2e tests run it against Flotilla.
CLUSTERCTL      := $(TOOLS_CACHE)/clusterctl-v1.14.2
GO_TEST_FLAGS   ?= -count=1 -timeout 45m
export FLOTILLA_BIN_CACHE
export CLUSTERCTL

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/flotilla.
	go build -o bin/flotilla ./cmd/flotilla

# The control plane binaries are built by `flotilla binaries build` (pkg/binaries), which carries
# the Go modules they are built from: a user with only the flotilla binary builds them the same way.
.PHONY: controlplane-binaries
controlplane-binaries: ## Build kube-apiserver, etcd, kwok... for K8S_VERSION into the machine cache (once).
	go run ./cmd/flotilla binaries build $(K8S_VERSION)

.PHONY: controlplane-binaries-all
controlplane-binaries-all: ## Build the control plane binaries of every supported Kubernetes version.
	go run ./cmd/flotilla binaries build --all

# Real nodes run Debian's runc, iptables and nsenter beside the programs `flotilla binaries build --nodes`
# makes. apt-get runs only for what is missing.
NODE_PACKAGES := runc:runc iptables:iptables nsenter:util-linux

.PHONY: node-packages
node-packages: ## Install Debian's runc, iptables and util-linux (nsenter), which real nodes run, when they are missing (as root).
	@missing=""; for p in $(NODE_PACKAGES); do command -v $${p%%:*} >/dev/null || missing="$$missing $${p#*:}"; done; \
	if [ -n "$$missing" ]; then echo "installing$$missing"; apt-get install -y --no-install-recommends $$missing; fi

.PHONY: node-binaries
node-binaries: node-packages ## Build kubelet, kube-proxy, containerd, the CNI plugins and the image programs for K8S_VERSION (once).
	go run ./cmd/flotilla binaries build $(K8S_VERSION) --nodes

.PHONY: upgrade-node-binaries
upgrade-node-binaries: node-packages ## Build the binaries and node programs of UPGRADE_FROM, where the upgrade tests start (once).
	go run ./cmd/flotilla binaries build $(UPGRADE_FROM) --nodes

$(CONTROLLER_GEN):
	mkdir -p $(TOOLS_CACHE)
	cd hack/tools/codegen && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

$(GOLANGCI_LINT):
	mkdir -p $(TOOLS_CACHE)
	cd hack/tools/lint && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with the linters listed in .golangci.yml.
	$(GOLANGCI_LINT) run ./...

$(CLUSTERCTL):
	mkdir -p $(TOOLS_CACHE)
	cd hack/tools/clusterctl && go build -o $(CLUSTERCTL) sigs.k8s.io/cluster-api/cmd/clusterctl

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code, CRDs, RBAC (a role per identity of the manager, and docs/rbac.md: every rule and its reason) and webhook manifests from markers; copy Cluster API's CRDs.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	go run ./hack/rbacgen -controller-gen $(CONTROLLER_GEN) -out config/rbac -doc docs/rbac.md
	$(CONTROLLER_GEN) webhook paths=./... output:webhook:artifacts:config=config/webhook
	hack/capi-crds.sh

GENERATED_SUMS = find api config docs/rbac.md -type f | LC_ALL=C sort | xargs sha256sum

.PHONY: verify-generate
verify-generate: $(CONTROLLER_GEN) ## Fail when `make generate` would change a generated file.
	@before=$$($(GENERATED_SUMS)); $(MAKE) -s generate >/dev/null; after=$$($(GENERATED_SUMS)); \
	if [ "$$before" != "$$after" ]; then \
		diff <(echo "$$before") <(echo "$$after") >&2; \
		echo "generated files were stale: 'make generate' has now rewritten them; review and commit" >&2; exit 1; \
	fi

# The main module and each tools module under hack/tools: each go.mod lists what its code imports.
GO_MODULES = . $(patsubst %/go.mod,%,$(wildcard hack/tools/*/go.mod))

.PHONY: tidy
tidy: ## Run `go mod tidy` in the main module and in every tools module.
	@for m in $(GO_MODULES); do (cd $$m && go mod tidy) || exit 1; done

.PHONY: verify-tidy
verify-tidy: ## Fail when `go mod tidy` would change a go.mod or go.sum (the main module's or a tools module's).
	@untidy=; for m in $(GO_MODULES); do (cd $$m && go mod tidy -diff >&2) || untidy="$$untidy $$m"; done; \
	if [ -n "$$untidy" ]; then \
		echo "go.mod/go.sum not tidy in:$$untidy (the diff is above): run 'make tidy', review and commit" >&2; exit 1; \
	fi

.PHONY: test
# The real-node tests (pkg/realnode's integration test and the e2e real-node scenario) run with the
# rest: the test target builds the node programs and installs runc and iptables first.
test: controlplane-binaries node-binaries upgrade-node-binaries verify-generate verify-tidy $(CLUSTERCTL) ## Run every test (unit, integration on real API servers and real nodes, end to end).
	go vet ./...
	go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v /test/e2e)
	# The end-to-end scenarios run alone: they time real clusters, which a busy machine distorts.
	go test $(GO_TEST_FLAGS) ./test/e2e/...

.PHONY: chaos
chaos: controlplane-binaries-all $(CLUSTERCTL) ## Fault injection (not in make test; about an hour): kill the manager, API servers, etcd and the registry during operations. FLOTILLA_CHAOS_RUNS=20 FLOTILLA_CHAOS_OPS=create,upgrade,package,addon
	set -o pipefail; go test -tags chaos -count=1 -timeout 8h -v -run '^TestChaos$$' ./test/e2e/ | grep -v '^=== \(RUN\|PAUSE\|CONT\)'

.PHONY: bench
bench: controlplane-binaries build ## Run the benchmarks and print the results table.
	@# The table tool is built first: compiled inside the pipe, it would share the CPU with the first benchmark.
	go build -o bin/bench-table ./bench/table
	{ go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench; \
	  go test -run '^$$' -bench HeadOfLine -benchtime 10x -timeout 20m ./packages ./addons; } | bin/bench-table

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME each (default 150s) on one worker; print the executions and crashes.
	hack/fuzz.sh

.PHONY: quickstart
quickstart: controlplane-binaries node-binaries build ## Create the local management cluster `mgmt` and the workload cluster `w1` with a real node, and install hello-flotilla there.
	hack/quickstart.sh

.PHONY: clean
clean: ## Remove build output (not the control plane binary cache).
	rm -rf bin
