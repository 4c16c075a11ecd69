# locknode. `make run` starts a 3-node dev cluster on loopback.
GO ?= go
PKGS ?= ./...

.PHONY: all build run test upgrade-test cluster-clients bench bench-compare lattrace lint fuzz chaos soak multiraft sim sim-mutants

all: lint build test

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.linkVersion=$(VERSION) -X main.linkCommit=$(COMMIT)

build:
	$(GO) build ./...
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/locknode ./cmd/locknode

run:
	$(GO) run ./cmd/locknode dev

# Under 15 minutes on 2 cores; -p 2 keeps package binaries from starving
# each other's raft timers.
# third_party/raft is its own module (outside ./...): its fork tests run
# here (and its lattrace build is vetted); upstream's whole suite is
# `cd third_party/raft && go test .`. bench/ is a module too: its unit
# tests run here, its benchmarks under `make bench`. The binary is also
# built for windows and darwin so that it keeps building there. ./sim's
# slice is 50 simulated schedules of 10 s under -race, two at a time
# (docs/simulation.md).
test:
	$(GO) test -race -p 2 -timeout 14m $(PKGS)
	GOOS=windows $(GO) build -o /dev/null ./cmd/locknode
	GOOS=darwin $(GO) build -o /dev/null ./cmd/locknode
	third_party/raft/update.sh --check
	cd third_party/raft && $(GO) test -race -count=1 -run 'ParallelWrite|CommitPush|CommitHint|ConflictHint|ResyncLastLog|FollowerCommit|InflightQueue|RandomTimer|IdleResend' . && $(GO) vet -tags lattrace .
	cd bench && $(GO) test -count=1 ./...

# Rolling upgrades between real binaries (docs/UPGRADING.md): the current
# code and the synthetic next release (-tags locknode_next), 3 `locknode
# serve` processes under load replaced one at a time, a rollback before
# activation, a leader kill during a manual activation, joins and
# snapshots across versions; an in-process cluster of the next release
# activating under the nemesis. The fsm and cluster gate tests of the next
# release run first. About 5 minutes on 2 cores.
upgrade-test:
	$(GO) test -race -count=1 -tags locknode_next -run 'Version|Snapshot|Gated' ./fsm/
	$(GO) test -race -count=1 -tags locknode_next -run 'Version|Join|Halt' ./cluster/
	$(GO) test -race -count=1 -tags locknode_next -run '^TestUpgradeChaos$$' ./testcluster/
	LOCKNODE_UPGRADE_TEST=1 $(GO) test -count=1 -timeout 10m -v -run '^TestUpgrade$$' ./testcluster/

# Redis Cluster clients (go-redis ClusterClient + redsync, rueidis +
# rueidislock, redis-py RedisCluster + Lock, ioredis Cluster +
# redis-semaphore) against 3 `locknode serve --resp-cluster` processes,
# each across a leader kill, CLUSTER_RUNS times (`make test` runs them
# once); then the reply shapes against a real redis-server cluster.
CLUSTER_RUNS ?= 5
cluster-clients:
	$(GO) test -count=$(CLUSTER_RUNS) -timeout 30m -v -run '^TestRedisCluster(GoRedisRedsync|Rueidis|RedisPy|IORedis)$$' ./compat/
	$(GO) test -count=1 -run '^TestRedisClusterShapesVsRedis$$' ./compat/

# Micro-benchmarks, then the locknode harness (bench/, its own Go module:
# not part of `make test`). Results go to bench/results/locknode.*.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./fsm/ ./cluster/
	cd bench && $(GO) run ./cmd/lockbench $(BENCHFLAGS)

# locknode against redis, redis AOF, Redlock (3 redis) and etcd 1/3 nodes,
# alternating, median of 3 runs each; locknode with clients spread over
# every node (the headline), on the leader only and on the followers only,
# over RESP and HTTP (~15 minutes on 2 cores). Installs
# redis-server / etcd-server with apt-get when root. Results:
# bench/results/compare.{md,svg,jsonl}.
bench-compare:
	cd bench && $(GO) run ./cmd/lockbench -compare $(BENCHFLAGS)

# Mixed load (locks, scripts with memory bombs, big values, connection
# churn, pub/sub with a subscriber that never reads) against 3 `locknode
# serve` processes for SOAK (default 30m), clients on every node; samples
# each node's RSS and longest apply pause. Fails if a node dies. Results:
# bench/results/soak.{md,jsonl}.
SOAK ?= 30m
soak:
	cd bench && $(GO) run ./cmd/lockbench -soak $(SOAK) $(BENCHFLAGS)

# N raft groups of the real node over one peer listener per node (3 nodes
# in one process): the CPU and log cost of 1, 16 and 64 idle groups with
# the product's timings and slower ones, and acquire/release throughput
# through 1, 2 and 4 groups of one cluster, medians of 3 (about 12
# minutes on 2 cores; docs/SCALING.md). Results:
# bench/results/multiraft-DATE.{md,jsonl}. Its listener test runs in
# `make test` with bench's unit tests.
multiraft:
	cd bench && $(GO) run ./cmd/multiraft $(BENCHFLAGS)

# Where one acknowledged write's time goes: nodes built with -tags lattrace
# timestamp each stage of every entry's commit path during a 1-worker
# lockbench run; bench's lattrace prints a per-stage table (p50/p90/mean),
# for a client on the leader and for one on a follower (the forwarding
# path), one cluster each.
TRACEDIR ?= /tmp/locknode-lattrace
LATTRACE_BACKENDS ?= locknode-resp@leader locknode-resp@follower
lattrace:
	rm -rf $(TRACEDIR) && mkdir -p $(TRACEDIR)
	$(GO) build -tags lattrace -o $(TRACEDIR)/locknode ./cmd/locknode
	set -e; for b in $(LATTRACE_BACKENDS); do \
		(cd bench && LOCKNODE_LATTRACE=$(TRACEDIR)/$$b $(GO) run ./cmd/lockbench -backends $$b \
			-skip contended,pipeline,failover,scale,scripts -concurrency 1 -duration 8s \
			-locknode-bin $(TRACEDIR)/locknode -out $(TRACEDIR) -name lattrace-$$b $(BENCHFLAGS)); \
		echo "== $$b"; (cd bench && $(GO) run ./cmd/lattrace $(TRACEDIR)/$$b); \
	done

# staticcheck runs from the module proxy at a pinned version (internal/lua,
# upstream gopher-lua, opts out in its staticcheck.conf).
STATICCHECK ?= v0.8.2
lint:
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) $(PKGS)

# Short fuzzing of every fuzz target (FUZZTIME per target).
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# Long nemesis run (testcluster): SEEDS schedules of DURATION each, from
# seed BASE (default: the clock, logged per seed; re-run one with
# LOCKNODE_CHAOS_SEED=s), first against the lock operations (TestChaos),
# then against the client surfaces (TestChaosSurfaces: Go handles,
# elections, `locknode lock` children, the fence middleware). About 8
# minutes with the defaults.
SEEDS ?= 10
DURATION ?= 20s
BASE ?= $(shell date +%s)
chaos:
	LOCKNODE_CHAOS_SEEDS=$(SEEDS) LOCKNODE_CHAOS_DURATION=$(DURATION) LOCKNODE_CHAOS_BASE=$(BASE) \
		$(GO) test -race -timeout 0 -v -run '^TestChaos(Surfaces|Disk)?$$' ./testcluster/

# The whole cluster on virtual time (docs/simulation.md): SCHEDULES seeded
# schedules (seeds SIM_BASE on) of SIM_DURATION simulated faults each on
# SIM_NODES nodes, SIM_JOBS at a time (0: one per core; each on one
# processor, GOMAXPROCS=1, unless GOMAXPROCS is set), or SEED=s to
# replay one, without the race detector (make test runs a short slice
# with it). SIM_THINK is the workload clients' longest pause. Prints each
# failing seed with its replay command and ends with one line: `sim: N
# schedules, S simulated s in W wall s (X.Yx real time), F failed`.
# Full log: SIMLOG.
SCHEDULES ?= 1000
SIM_DURATION ?= 60s
SIM_BASE ?= 1
SIM_NODES ?= 3
SIM_JOBS ?= 0
SIM_THINK ?= 100ms
SIMLOG ?= /tmp/locknode-sim.log
sim:
	@$(GO) test -count=1 -timeout 0 -v -run '^TestSim$$' ./sim/ -sim.schedules=$(SCHEDULES) -sim.base=$(SIM_BASE) -sim.nodes=$(SIM_NODES) \
		-sim.jobs=$(SIM_JOBS) -sim.think=$(SIM_THINK) -sim.duration=$(SIM_DURATION) $(if $(SEED),-sim.seed=$(SEED)) >$(SIMLOG) 2>&1; \
		grep -E '^(FAILED|panic)' $(SIMLOG); grep '^sim: ' $(SIMLOG) || { tail -40 $(SIMLOG); exit 1; }; \
		grep -q '^sim: .* 0 failed$$' $(SIMLOG)

# The mutation check (docs/simulation.md): each planted bug (build tag
# locknode_mutants: fsm/mutants_on.go, cluster/mutants_on.go) in turn,
# seeded schedules until a checker objects; fails if one survives its
# stated number of seeds. Ends with `mutants: K of M found`.
sim-mutants:
	@$(GO) test -v -tags locknode_mutants -count=1 -timeout 30m -run '^TestMutants$$' ./sim/ -sim.think=$(SIM_THINK) >$(SIMLOG) 2>&1; \
		grep -E '^(mutant |panic)' $(SIMLOG); grep '^mutants: ' $(SIMLOG) || { tail -40 $(SIMLOG); exit 1; }; \
		! grep -q 'SURVIVED' $(SIMLOG)
