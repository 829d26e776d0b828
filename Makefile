# kctl - build, test, sanitize, bench. `make run` runs the demo, `make test` the tests.
CC      ?= cc
CLANG   ?= clang
CXX     ?= g++
STD     ?= -std=c99
WARN    := -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  ?= -O2 -g
BASE    := -D_POSIX_C_SOURCE=200809L $(WARN)
LIBS    := -pthread
B       := build
TESTSRC := tests/run.c tests/test_core.c tests/test_limiter.c tests/test_queue.c tests/test_json.c tests/test_obj.c tests/test_indexer.c tests/test_fifo.c tests/test_selector.c tests/test_memstore.c tests/test_apisrv.c tests/test_persist.c tests/test_reflector.c tests/test_informer.c tests/test_controller.c tests/test_offline.c tests/test_manager.c tests/test_leader.c tests/test_e2e.c tests/test_step.c tests/test_review.c tests/test_contract.c tests/test_budget.c tests/test_edge.c
DEPS    := kctl.h tests/kt.h tests/contract.h examples/dirstore.h $(TESTSRC)

.PHONY: all build-all run storm test asan tsan bench bench-contended soak cxx fuzz fuzz-short size size-sections cross firmware clean FORCE
all: $(B)/kt $(B)/edge_agent $(B)/reconcile_storm $(B)/hello_controller $(B)/custom_transport $(B)/edge_offline $(B)/kube-test-server

$(B):
	@mkdir -p $(B)

# The test runner across the option matrix.
$(B)/kt: $(DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ $(TESTSRC) $(LIBS)
# clang, C11, and KCTL_SMALL=1: the small code of -Os builds behaves as the
# fast code does (kt-trim-mcu runs it too, with the trim switches).
$(B)/kt-clang-c11: $(DEPS) | $(B)
	$(CLANG) -std=c11 $(BASE) $(CFLAGS) -DKT_LIGHT -DKCTL_SMALL=1 -o $@ $(TESTSRC) $(LIBS)
# NDEBUG: the asserts out (the soak-sized parts run in build/kt: the same
# code with its asserts, and the same complexity).
$(B)/kt-ndebug: $(DEPS) | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -DKT_LIGHT -o $@ $(TESTSRC) $(LIBS)
$(B)/kt-static: $(DEPS) tests/static_build.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -DKT_LIGHT -DKCTL_STATIC -o $@ tests/static_build.c $(LIBS)
$(B)/kt-nothreads: $(DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -DKT_LIGHT -DKCTL_NO_THREADS -o $@ $(TESTSRC)
# The trim switches (kctl.h, COMPILE-TIME OPTIONS), two builds: a test that
# needs a part compiled out is skipped with the switch as its reason (kt.h).
$(B)/kt-trim-store: $(DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -DKT_LIGHT -DKCTL_NO_MEMSTORE -DKCTL_NO_FLOAT -o $@ $(TESTSRC) $(LIBS)
$(B)/kt-trim-mcu: $(DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -DKT_LIGHT -DKCTL_NO_LEADER -DKCTL_NO_METRICS -DKCTL_NO_JSON_DOUBLE -DKCTL_NO_THREADS -DKCTL_NO_FILES -DKCTL_NO_SELECTORS -DKCTL_NO_CHECKPOINT -DKCTL_NO_MERGE_PATCH -DKCTL_NO_VALIDATION -DKCTL_NO_PAGING -DKCTL_NO_FAULTS -DKCTL_NO_INDEXES -DKCTL_NO_OFFLINE -DKCTL_NO_HOLD_BACKOFF -DKCTL_NO_HOT_LOOP -DKCTL_NO_QUEUE_PRIORITY -DKCTL_NO_PENDING_MODES -DKCTL_NO_DURATIONS -DKCTL_NO_PREDICATES -DKCTL_NO_RESYNC -DKCTL_NO_TRANSFORM -DKCTL_NO_QUEUE_BOUND -DKCTL_NO_GENERATE_NAME -DKCTL_NO_MEMSTORE_BOUND -DKCTL_NO_CODEC -DKCTL_SMALL=1 -o $@ $(TESTSRC)
$(B)/kt-asan: $(DEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -o $@ $(TESTSRC) $(LIBS)
$(B)/kt-tsan: $(DEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=thread -o $@ $(TESTSRC) $(LIBS)

# The tests that need a real etcd (tests/etcd_harness.h; the etcd
# transport's need libcurl too): build/kt-etcd, tests/run_etcd.c. It always
# builds: without libcurl's headers (Debian: libcurl4-openssl-dev) it is
# built without the curl parts, whose tests then skip, and without etcd
# (Debian: etcd-server) every test skips; KT_REQUIRE_ETCD=1 makes a skip a
# failure. KT_CURL=no builds it without libcurl where the headers are there.
ifndef KT_CURL
KT_CURL := $(shell printf '\043include <curl/curl.h>\n' | gcc -E -x c - >/dev/null 2>&1 && echo yes || echo no)
endif
ifeq ($(KT_CURL),yes)
CURL_DEF  := -DKT_HAVE_CURL=1
CURL_LIBS := $(shell curl-config --libs 2>/dev/null || echo -lcurl)
endif
ETCDSRC  := tests/run_etcd.c tests/etcd_harness.c tests/test_etcd_harness.c tests/test_contract.c tests/test_etcd.c tests/test_etcd_tls.c tests/test_etcd_faults.c
ETCDDEPS := kctl.h kctl_http_curl.h tests/kt.h tests/etcd_harness.h tests/contract.h tests/fault_rig.h examples/dirstore.h $(ETCDSRC) $(B)/etcd-config
# rebuilt when the curl (or OpenSSL, for the test API server) choice changes
$(B)/etcd-config: FORCE | $(B)
	@echo 'KT_CURL=$(KT_CURL) $(CURL_LIBS) KT_SSL=$(KT_SSL)' | cmp -s - $@ || echo 'KT_CURL=$(KT_CURL) $(CURL_LIBS) KT_SSL=$(KT_SSL)' > $@
FORCE:
$(B)/kt-etcd: $(ETCDDEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) $(CURL_DEF) -o $@ $(ETCDSRC) $(CURL_LIBS) $(LIBS)
$(B)/kt-etcd-asan: $(ETCDDEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer $(CURL_DEF) -o $@ $(ETCDSRC) $(CURL_LIBS) $(LIBS)
$(B)/kt-etcd-tsan: $(ETCDDEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=thread $(CURL_DEF) -o $@ $(ETCDSRC) $(CURL_LIBS) $(LIBS)

# The Kubernetes API transport's tests (tests/kube.h): build/kt-kube,
# tests/run_kube.c, with a test API server of its own (tests/kube_server.h)
# that kubectl and python3's kubernetes package check. Without libcurl the
# transport's tests skip; KT_REQUIRE_KUBE=1 makes a skip a failure.
# The test API server serves https too where OpenSSL's headers are there
# (Debian: libssl-dev); KT_SSL=no builds it without.
ifndef KT_SSL
KT_SSL := $(shell printf '\043include <openssl/ssl.h>\n' | gcc -E -x c - >/dev/null 2>&1 && echo yes || echo no)
endif
ifeq ($(KT_SSL),yes)
SSL_DEF  := -DKT_HAVE_OPENSSL=1
SSL_LIBS := -lssl -lcrypto
endif
KUBESRC  := tests/run_kube.c tests/kube_server.c tests/test_kube_wire.c tests/test_kubeconfig.c tests/test_kube_server.c tests/test_kube.c tests/test_kube_contract.c tests/test_kube_faults.c tests/test_kube_demo.c tests/test_contract.c
KUBEDEPS := kctl.h kctl_http_curl.h tests/kt.h tests/kube.h tests/kube_server.h tests/contract.h tests/fault_rig.h examples/dirstore.h $(KUBESRC) $(B)/etcd-config
$(B)/kt-kube: $(KUBEDEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) $(CURL_DEF) $(SSL_DEF) -o $@ $(KUBESRC) $(CURL_LIBS) $(SSL_LIBS) $(LIBS)
$(B)/kt-kube-asan: $(KUBEDEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer $(CURL_DEF) $(SSL_DEF) -o $@ $(KUBESRC) $(CURL_LIBS) $(SSL_LIBS) $(LIBS)
$(B)/kt-kube-tsan: $(KUBEDEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=thread $(CURL_DEF) $(SSL_DEF) -o $@ $(KUBESRC) $(CURL_LIBS) $(SSL_LIBS) $(LIBS)
# The test API server as a program (tests/kube_server_main.c): --port N
# (0: a free one), prints its URL first; for kubectl or python by hand.
$(B)/kube-test-server: kctl.h tests/kube_server.h tests/kube_server.c tests/kube_server_main.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) $(SSL_DEF) -o $@ tests/kube_server_main.c tests/kube_server.c $(SSL_LIBS) $(LIBS)

# kctl.h, implementation included, compiled and linked as C++11.
$(B)/cxx-check: kctl.h tests/cxx_check.cpp | $(B)
	$(CXX) -std=c++11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -O2 -o $@ tests/cxx_check.cpp $(LIBS)
# kctl_http_curl.h too, where libcurl is there
$(B)/cxx-curl-check: kctl.h kctl_http_curl.h tests/cxx_curl_check.cpp $(B)/etcd-config | $(B)
	$(CXX) -std=c++11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -Werror -O2 -o $@ tests/cxx_curl_check.cpp $(CURL_LIBS) $(LIBS)
CXXCHECKS := $(B)/cxx-check $(if $(filter yes,$(KT_CURL)),$(B)/cxx-curl-check,)
cxx: $(CXXCHECKS)

# kctl.h asks for POSIX itself when it is the implementation file's first
# include (the examples build with a plain `cc -std=c99 x.c -pthread`), and
# names the fix when a system header came first.
$(B)/posix-check: kctl.h examples/hello_controller.c | $(B)
	gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -o $(B)/hello-plain examples/hello_controller.c -pthread
	printf '#include <stdio.h>\n#define KCTL_IMPLEMENTATION\n#include "kctl.h"\n' > $(B)/posix-late.c
	! gcc -std=c99 -I. -c $(B)/posix-late.c -o $(B)/posix-late.o 2> $(B)/posix-late.err
	grep -q 'compile with -D_POSIX_C_SOURCE=200809L' $(B)/posix-late.err
	@touch $@

# The README's complete controller is examples/hello_controller.c, word for word.
$(B)/readme-check: README.md examples/hello_controller.c | $(B)
	awk 'f && /^```$$/ {exit} f {print} /^## A complete controller/ {s=1} s && /^```c$$/ {f=1}' README.md > $(B)/readme-hello.c
	sed -e '1d' -e 's|"../kctl.h"|"kctl.h"|' examples/hello_controller.c | diff -u - $(B)/readme-hello.c
	@touch $@

MATRIX := $(B)/kt $(B)/kt-clang-c11 $(B)/kt-ndebug $(B)/kt-static $(B)/kt-nothreads $(B)/kt-trim-store $(B)/kt-trim-mcu

# With save_on_write a write is acknowledged only once it is on disk: the
# driver runs children with an LD_PRELOAD shim (tests/faultfs.c) that fills
# or fails the disk, then checks the file as a restart reads it. Not in the
# sanitizer runs: their runtime must be the first thing preloaded.
$(B)/libkctl-faultfs.so: tests/faultfs.c | $(B)
	gcc -std=c99 $(WARN) -O2 -fPIC -shared -o $@ tests/faultfs.c -ldl
$(B)/faultfs-driver: kctl.h tests/faultfs_driver.c $(B)/libkctl-faultfs.so | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ tests/faultfs_driver.c $(LIBS)
# KCTL_NO_FILES compiles (the memstore without persistence).
$(B)/nofiles-check: kctl.h | $(B)
	gcc $(STD) $(BASE) -DKCTL_NO_FILES -DKCTL_IMPLEMENTATION -x c -c kctl.h -o $(B)/nofiles.o
	@touch $@

# The implementation calls only the C library functions kctl.h's LIBC
# list names (nm -u of the implementation alone, default and trimmed), and
# none of floating point with KCTL_NO_FLOAT.
$(B)/libc-check: kctl.h tests/libc_check.sh | $(B)
	sh tests/libc_check.sh gcc $(B)
	@touch $@

# The edge agent runs in the suites too, for 1 s on a fresh state directory:
# it exits 1 unless the device ends equal to the desired state.
AGENT_ENV = EDGE_AGENT_SECONDS=1 EDGE_AGENT_STATE=$(B)/edge-agent-$@
TEST_BINS := $(MATRIX) $(B)/posix-check $(B)/readme-check $(B)/nofiles-check $(B)/libc-check $(CXXCHECKS) $(B)/edge_agent $(B)/hello_controller $(B)/custom_transport $(B)/edge_offline $(B)/reconcile_storm $(B)/faultfs-driver $(B)/baremetal-host $(B)/port-check $(B)/kt-etcd $(B)/kt-kube
test: $(TEST_BINS)
	@rm -rf $(B)/edge-agent-$@ && $(AGENT_ENV) sh tests/matrix.sh $(B)/kt-etcd $(B)/kt-kube $(MATRIX) $(CXXCHECKS) $(B)/edge_agent tests/edge_agent_step.sh $(B)/custom_transport $(B)/edge_offline $(B)/reconcile_storm $(B)/faultfs-driver $(B)/baremetal-host $(B)/port-check

ASAN_BINS := $(B)/kt-asan $(B)/reconcile_storm-asan $(B)/edge_agent-asan $(B)/custom_transport-asan $(B)/edge_offline-asan $(B)/kt-etcd-asan $(B)/kt-kube-asan
asan: $(ASAN_BINS)
	@rm -rf $(B)/edge-agent-$@ && $(AGENT_ENV) KT_EDGE_AGENT=$(B)/edge_agent-asan sh tests/matrix.sh $(B)/kt-etcd-asan $(B)/kt-kube-asan $(B)/kt-asan $(B)/reconcile_storm-asan $(B)/edge_agent-asan tests/edge_agent_step.sh $(B)/custom_transport-asan $(B)/edge_offline-asan

TSAN_BINS := $(B)/kt-tsan $(B)/edge_agent-tsan $(B)/kt-etcd-tsan $(B)/kt-kube-tsan
tsan: $(TSAN_BINS)
	@rm -rf $(B)/edge-agent-$@ && $(AGENT_ENV) KT_EDGE_AGENT=$(B)/edge_agent-tsan TSAN_OPTIONS="halt_on_error=1" sh tests/matrix.sh $(B)/kt-tsan $(B)/kt-etcd-tsan $(B)/kt-kube-tsan $(B)/edge_agent-tsan tests/edge_agent_step.sh

# Every binary that make test, asan and tsan run, built two at a time
# first (.ci/run: make -j2 build-all) so that the suites start at once.
build-all: $(TEST_BINS) $(ASAN_BINS) $(TSAN_BINS)

# The demo: an edge agent reconciling device configuration (about 10 s;
# its store persists in build/edge-agent across runs). Where libcurl is
# installed it can also run on an etcd cluster (--etcd) and on a
# Kubernetes cluster (--kube; build/kt-kube runs it against the test API
# server: tests/test_kube_demo.c, the agent named by KT_EDGE_AGENT).
AGENT_CURL := $(if $(filter yes,$(KT_CURL)),-DEDGE_AGENT_ETCD -DEDGE_AGENT_KUBE,)
AGENT_DEPS := kctl.h kctl_http_curl.h examples/edge_agent.c $(B)/etcd-config
$(B)/edge_agent: $(AGENT_DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) $(AGENT_CURL) -o $@ examples/edge_agent.c $(LIBS) $(if $(AGENT_CURL),$(CURL_LIBS),)
$(B)/edge_agent-asan: $(AGENT_DEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all $(AGENT_CURL) -o $@ examples/edge_agent.c $(LIBS) $(if $(AGENT_CURL),$(CURL_LIBS),)
$(B)/edge_agent-tsan: $(AGENT_DEPS) | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=thread $(AGENT_CURL) -o $@ examples/edge_agent.c $(LIBS) $(if $(AGENT_CURL),$(CURL_LIBS),)
run: $(B)/edge_agent
	./$(B)/edge_agent

# The README's controller example (built by `make test`, so it stays true).
$(B)/hello_controller: kctl.h examples/hello_controller.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ examples/hello_controller.c $(LIBS)

# A transport of its own over a directory of JSON files (examples/dirstore.h,
# which the contract suite runs too), with a controller on it (exits 1
# unless everything it checks holds).
$(B)/custom_transport: kctl.h examples/custom_transport.c examples/dirstore.h | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ examples/custom_transport.c $(LIBS)
$(B)/custom_transport-asan: kctl.h examples/custom_transport.c examples/dirstore.h | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o $@ examples/custom_transport.c $(LIBS)
# edge autonomy: a checkpointed restart while offline, reported state (virtual clock)
$(B)/edge_offline: kctl.h examples/edge_offline.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ examples/edge_offline.c $(LIBS)
$(B)/edge_offline-asan: kctl.h examples/edge_offline.c | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o $@ examples/edge_offline.c $(LIBS)

# The seed's reconcile storm, on the virtual clock.
$(B)/reconcile_storm: kctl.h examples/reconcile_storm.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ examples/reconcile_storm.c $(LIBS)
$(B)/reconcile_storm-asan: kctl.h examples/reconcile_storm.c | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o $@ examples/reconcile_storm.c $(LIBS)
storm: $(B)/reconcile_storm
	./$(B)/reconcile_storm

$(B)/bench-%: kctl.h bench/%.c bench/bench.h bench/conditions.h | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ bench/$*.c $(LIBS)
# kctl on real etcd clusters (bench/ETCD.md): needs libcurl and etcd; it
# starts and stops its own clusters and says why when it cannot run.
$(B)/bench-etcd: kctl.h kctl_http_curl.h bench/etcd.c bench/bench.h bench/remote.h tests/etcd_harness.c tests/etcd_harness.h $(B)/etcd-config | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ bench/etcd.c tests/etcd_harness.c $(CURL_LIBS) $(LIBS)
# kctl on the Kubernetes API transport against the test API server, in
# its own process over loopback (bench/KUBE.md): needs libcurl; ~30 s.
$(B)/bench-kube: kctl.h kctl_http_curl.h bench/kube.c bench/bench.h bench/remote.h tests/kube_server.c tests/kube_server.h $(B)/etcd-config | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ bench/kube.c tests/kube_server.c $(CURL_LIBS) $(LIBS)
bench: $(B)/bench-queue $(B)/bench-cache $(B)/bench-e2e $(B)/bench-json $(B)/bench-journal $(if $(filter yes,$(KT_CURL)),$(B)/bench-etcd $(B)/bench-kube,)
	./$(B)/bench-queue
	./$(B)/bench-cache
	./$(B)/bench-e2e
	./$(B)/bench-json
	./$(B)/bench-journal
ifeq ($(KT_CURL),yes)
	./$(B)/bench-etcd
	./$(B)/bench-kube
else
	@echo "skip bench-etcd, bench-kube: libcurl headers were absent at build time (Debian: apt-get install libcurl4-openssl-dev)"
endif
	@echo "contended and pinned runs of the queue and e2e benches: make bench-contended"

# The queue and e2e benches under contention: each round idle, then with a
# busy-loop child process the bench starts and kills itself (-C), figures
# side by side; then the e2e bench with all its threads on one CPU and on
# two (taskset, where the machine allows it). Each bench prints its
# conditions (CPUs, affinity, load average, mode).
bench-contended: $(B)/bench-queue $(B)/bench-e2e
	./$(B)/bench-queue -C
	./$(B)/bench-e2e -C
	@if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then \
		echo "== pinned: every thread on CPU 0 (taskset -c 0)"; taskset -c 0 ./$(B)/bench-e2e; \
		if taskset -c 0,1 true 2>/dev/null; then echo "== pinned: CPUs 0 and 1 (taskset -c 0,1)"; taskset -c 0,1 ./$(B)/bench-e2e; fi; \
	else echo "skip the pinned runs: no taskset, or no affinity allowed here"; fi

# A controller on a 3-member etcd cluster through random faults, one after
# the other (tests/test_etcd_faults.c, tef_chaos): SOAK_SECONDS (default
# 300); KT_ETCD_CHAOS_SEED=<n> repeats a run, KT_ETCD_CHAOS_AUTH=1 with auth.
SOAK_SECONDS ?= 300
soak: $(B)/kt-etcd
	KT_REQUIRE_ETCD=1 KT_VERBOSE=1 KT_ETCD_CHAOS=$(SOAK_SECONDS) KT_ONLY=tef_chaos ./$(B)/kt-etcd

# libFuzzer targets, one per parser (clang). `make fuzz` runs each for
# FUZZ_SECONDS (default 120; `make -j2 fuzz` runs two at once); CI runs
# `make fuzz-short` (20 s each, two at a time). New
# inputs go to a scratch copy of the corpus, never into the tree.
FUZZERS := json selector merge_patch memstore_load journal apisrv etcd kube kubeconfig checkpoint
FUZZ_SECONDS ?= 120
$(B)/fuzz-%: tests/fuzz_%.c kctl.h | $(B)
	$(CLANG) -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $<
# what kctl_http_curl.h reads from etcd (links libcurl)
$(B)/fuzz-etcd: tests/fuzz_etcd.c kctl.h kctl_http_curl.h | $(B)
	$(CLANG) -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $< -lcurl
# the kubeconfig reader of kctl_http_curl.h (links libcurl)
$(B)/fuzz-kubeconfig: tests/fuzz_kubeconfig.c kctl.h kctl_http_curl.h | $(B)
	$(CLANG) -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $< -lcurl
# what kctl_http_curl.h reads from a Kubernetes API server (links libcurl)
$(B)/fuzz-kube: tests/fuzz_kube.c kctl.h kctl_http_curl.h | $(B)
	$(CLANG) -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ $< -lcurl
fuzz: $(addprefix fuzz-run-,$(FUZZERS))
fuzz-run-%: $(B)/fuzz-%
	@rm -rf $(B)/corpus-$* && mkdir -p $(B)/corpus-$* && cp tests/fuzz_corpus/$*/* $(B)/corpus-$*/ && \
	./$(B)/fuzz-$* -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(B)/ \
	    $(B)/corpus-$* > $(B)/fuzz-$*.log 2>&1; rc=$$?; tail -n 12 $(B)/fuzz-$*.log; \
	if [ $$rc -ne 0 ]; then echo "fuzz-$* FAILED (see $(B)/fuzz-$*.log)"; exit 1; fi
# two fuzzers at a time (make -j2): 20 s each on a core of its own
fuzz-short:
	@$(MAKE) --no-print-directory -j2 fuzz FUZZ_SECONDS=20

# The -Os footprint (text, data, bss as `size` prints them) of the queue
# alone, the JSON reader alone and a minimal single-threaded controller on
# the memstore (tests/size/), for x86-64 (libc linked dynamically: kctl's
# own) and, where arm-none-eabi-gcc is installed, Cortex-M4 with newlib
# nano (libc included), on the bare-metal port of tests/size/board.h.
# The minimal build's switches: SIZE_SWITCHES. Targets (text, printed
# with whether they are met): the controller in at most 32 KB on
# Cortex-M4 (libc included), 64 KB on x86-64 (SIZE_TARGET_<target>).
SIZE_SWITCHES := -DKCTL_NO_THREADS -DKCTL_NO_FILES -DKCTL_NO_FLOAT -DKCTL_NO_LEADER -DKCTL_NO_METRICS -DKCTL_NO_LOG_STRINGS -DKCTL_NO_VALIDATION \
                 -DKCTL_NO_SELECTORS -DKCTL_NO_CHECKPOINT -DKCTL_NO_MERGE_PATCH -DKCTL_NO_PAGING -DKCTL_NO_FAULTS -DKCTL_NO_INDEXES \
                 -DKCTL_NO_OFFLINE -DKCTL_NO_HOLD_BACKOFF -DKCTL_NO_HOT_LOOP -DKCTL_NO_QUEUE_PRIORITY -DKCTL_NO_PENDING_MODES \
                 -DKCTL_NO_DURATIONS -DKCTL_NO_PREDICATES -DKCTL_NO_RESYNC -DKCTL_NO_TRANSFORM -DKCTL_NO_QUEUE_BOUND -DKCTL_NO_GENERATE_NAME \
                 -DKCTL_NO_MEMSTORE_BOUND -DKCTL_NO_CODEC -DNDEBUG
SIZE_TARGET_x86_64    := 65536
SIZE_TARGET_cortex-m4 := 32768
SIZE_FLAGS    := -std=c99 $(WARN) -Os -ffunction-sections -fdata-sections -Wl,--gc-sections $(SIZE_SWITCHES)
SIZE_M4       := arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb --specs=nano.specs --specs=nosys.specs -DKCTL_SIZE_BAREMETAL
SIZE_PROGS    := queue json controller controller-static
# controller-static: the same program with KCTL_STATIC (the implementation
# and the program in one file, as a firmware image often is; -flto gives
# about the same where they are apart)
size_extra     = $$(case $(1) in *-static) echo -DKCTL_STATIC;; esac)

# The core test suite (build/kt's) on other processors: built with
# Debian's cross compilers (-O1: half the build time of -O2), linked
# statically (armhf: dynamically, see below) and run under qemu-user, in the default and the
# KCTL_NO_THREADS builds (the latter with KCTL_SMALL=1, the small code
# of firmware builds, on 32- and 64-bit processors); i386 keeps the x87's excess precision
# (-mfpmath=387); the 32-bit targets read directories with 64-bit offsets
# (the directory store). KT_EMULATED=1 leaves out the soak-sized parts of
# three tests (they say so, counted as skipped). tests/cross.sh builds two
# at a time and starts each run as soon as its build is done; each run's
# output is in build/cross/kt-<target>[-nothreads].log.
# armhf links against the shared glibc (qemu-arm finds it under the third
# field's prefix; not position-independent, which runs faster under
# qemu): in a static armhf link, binutils' veneer for a Thumb
# tail call into an ifunc (glibc's strncpy ending in memcpy) can branch to
# the ifunc's resolver instead of its PLT entry, so strncpy copies nothing.
# Whether the veneer is made depends on the layout: an unrelated change to
# the tests made tq_thread_* and tq_nomem_sweep read empty keys.
CROSS_TARGETS := aarch64:qemu-aarch64 armhf:qemu-arm:/usr/arm-linux-gnueabihf i386:qemu-i386
CROSS_LINK_aarch64 := -static
CROSS_LINK_armhf   := -no-pie
CROSS_LINK_i386    := -static
CROSS_CC_aarch64 := aarch64-linux-gnu-gcc
CROSS_CC_armhf   := arm-linux-gnueabihf-gcc
CROSS_CC_i386    := i686-linux-gnu-gcc
CROSS_FLAGS_armhf := -D_FILE_OFFSET_BITS=64
CROSS_FLAGS_i386  := -mfpmath=387 -D_FILE_OFFSET_BITS=64
CROSS_BINS := $(foreach t,$(CROSS_TARGETS),$(B)/cross/kt-$(firstword $(subst :, ,$(t))) $(B)/cross/kt-$(firstword $(subst :, ,$(t)))-nothreads)
$(B)/cross:
	@mkdir -p $@
$(CROSS_BINS): $(B)/cross/kt-%: $(DEPS) | $(B)/cross
	$(CROSS_CC_$(firstword $(subst -, ,$*))) $(STD) $(BASE) -O1 $(CROSS_LINK_$(firstword $(subst -, ,$*))) $(CROSS_FLAGS_$(firstword $(subst -, ,$*))) \
	    $(if $(findstring -nothreads,$*),-DKCTL_NO_THREADS -DKCTL_SMALL=1) -o $@ $(TESTSRC) $(if $(findstring -nothreads,$*),,$(LIBS))
cross:
	@sh tests/cross.sh $(B) $(CROSS_TARGETS)

# Firmware: the bare-metal example (examples/baremetal.c: a port of its
# own on a SysTick counter, no threads, no files) linked for a Cortex-M4
# with newlib nano; the FreeRTOS port (examples/port_freertos.h) compiled
# with threads for the same core against its own declarations of the
# FreeRTOS calls; the example linked for RISC-V (rv32imac) with picolibc,
# freestanding. text/data/bss as size prints them.
FW_WARN := -std=c99 $(WARN)
FW_M4   := arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -Os --specs=nano.specs
FW_RV   := riscv64-unknown-elf-gcc -march=rv32imac -mabi=ilp32 -Os --specs=picolibc.specs --oslib=semihost \
           -Wl,--defsym=__flash_size=0x100000 -Wl,--defsym=__ram_size=0x40000
$(B)/fw: | $(B)
	@mkdir -p $@
$(B)/fw/baremetal-m4.elf: kctl.h examples/baremetal.c | $(B)/fw
	$(FW_M4) --specs=nosys.specs $(FW_WARN) -o $@ examples/baremetal.c
$(B)/fw/freertos-m4.o: kctl.h examples/port_freertos.h tests/freertos_check.c | $(B)/fw
	$(FW_M4) $(FW_WARN) -c -o $@ tests/freertos_check.c
$(B)/fw/baremetal-rv32.elf: kctl.h examples/baremetal.c | $(B)/fw
	$(FW_RV) $(FW_WARN) -o $@ examples/baremetal.c
firmware: $(B)/fw/baremetal-m4.elf $(B)/fw/freertos-m4.o $(B)/fw/baremetal-rv32.elf
	@arm-none-eabi-size $(B)/fw/baremetal-m4.elf $(B)/fw/freertos-m4.o
	@riscv64-unknown-elf-size $(B)/fw/baremetal-rv32.elf

# The bare-metal example on the host, on a simulated board (make test):
# exits 1 unless the LEDs end as configured.
$(B)/baremetal-host: kctl.h examples/baremetal.c | $(B)
	gcc $(STD) $(WARN) $(CFLAGS) -o $@ examples/baremetal.c

# The port layer with threads: KCTL_THREAD_STACK_SIZE reaches every thread
# kctl starts, on the POSIX port and on a port of its own (tests/port_check.c).
$(B)/port-check: kctl.h tests/port_check.c | $(B)
	gcc $(STD) $(WARN) $(CFLAGS) -o $@ tests/port_check.c $(LIBS)
	gcc $(STD) $(WARN) $(CFLAGS) -DPORT_CHECK_CUSTOM -o $@-custom tests/port_check.c $(LIBS)
	./$@-custom

# The -Os footprint of the demo (the queue, limiters, clock) and of the
# whole implementation linked in, as `size` prints them.
size: | $(B)
	@for p in $(SIZE_PROGS); do gcc -D_POSIX_C_SOURCE=200809L $(SIZE_FLAGS) $(call size_extra,$$p) -o $(B)/size-$$p-x86_64 tests/size/$${p%-static}.c || exit 1; done
	@if command -v arm-none-eabi-gcc >/dev/null 2>&1; then \
	    for p in $(SIZE_PROGS); do $(SIZE_M4) $(SIZE_FLAGS) $(call size_extra,$$p) -o $(B)/size-$$p-cortex-m4 tests/size/$${p%-static}.c || exit 1; done; \
	else echo "size: no arm-none-eabi-gcc (Debian: gcc-arm-none-eabi libnewlib-arm-none-eabi): x86-64 only"; fi
	@printf '%-18s %-10s %8s %6s %6s\n' program target text data bss
	@for t in x86_64 cortex-m4; do for p in $(SIZE_PROGS); do f=$(B)/size-$$p-$$t; [ -f $$f ] || continue; \
	    if [ $$t = x86_64 ]; then s=size; else s=arm-none-eabi-size; fi; \
	    $$s $$f | awk -v p=$$p -v t=$$t 'NR == 2 { printf "%-18s %-10s %8d %6d %6d\n", p, t, $$1, $$2, $$3 }'; done; done
	@for p in controller controller-static; do for t in x86_64 cortex-m4; do f=$(B)/size-$$p-$$t; [ -f $$f ] || continue; \
	    if [ $$t = x86_64 ]; then s=size; m=$(SIZE_TARGET_x86_64); else s=arm-none-eabi-size; m=$(SIZE_TARGET_cortex-m4); fi; \
	    $$s $$f | awk -v p=$$p -v t=$$t -v m=$$m 'NR == 2 { printf "target: %s text <= %d on %s: %s (%d, %+d)\n", p, m, t, \
	        $$1 <= m ? "met" : "NOT MET", $$1, $$1 - m }'; done; done

# Where the minimal controller's bytes go, by kctl.h section (its ">>tag"),
# with the biggest symbols of each (SIZE_TOP of them): Cortex-M4 where
# arm-none-eabi-gcc is installed, else x86-64.
SIZE_TOP ?= 8
size-sections: | $(B)
	@if command -v arm-none-eabi-gcc >/dev/null 2>&1; then \
	    $(SIZE_M4) $(SIZE_FLAGS) -g -o $(B)/size-sections.elf tests/size/controller.c && \
	    echo "minimal controller, cortex-m4:" && sh tests/size/sections.sh arm-none-eabi-nm $(B)/size-sections.elf kctl.h $(SIZE_TOP); \
	else gcc -D_POSIX_C_SOURCE=200809L $(SIZE_FLAGS) -g -o $(B)/size-sections.elf tests/size/controller.c && \
	    echo "minimal controller, x86_64:" && sh tests/size/sections.sh nm $(B)/size-sections.elf kctl.h $(SIZE_TOP); fi

clean:
	rm -rf $(B)
