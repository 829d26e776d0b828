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
TESTSRC := tests/run.c tests/test_core.c tests/test_limiter.c tests/test_queue.c tests/test_json.c tests/test_obj.c tests/test_indexer.c tests/test_fifo.c tests/test_selector.c tests/test_memstore.c tests/test_apisrv.c tests/test_persist.c tests/test_reflector.c tests/test_informer.c tests/test_controller.c tests/test_manager.c tests/test_leader.c tests/test_e2e.c tests/test_step.c tests/test_review.c tests/test_contract.c
DEPS    := kctl.h tests/kt.h tests/contract.h examples/dirstore.h $(TESTSRC)

.PHONY: all run storm test asan tsan bench soak cxx fuzz fuzz-short size clean FORCE
all: $(B)/kt $(B)/edge_agent $(B)/reconcile_storm $(B)/hello_controller $(B)/custom_transport $(B)/kube-test-server

$(B):
	@mkdir -p $(B)

# The test runner across the option matrix.
$(B)/kt: $(DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ $(TESTSRC) $(LIBS)
$(B)/kt-clang-c11: $(DEPS) | $(B)
	$(CLANG) -std=c11 $(BASE) $(CFLAGS) -o $@ $(TESTSRC) $(LIBS)
$(B)/kt-ndebug: $(DEPS) | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ $(TESTSRC) $(LIBS)
$(B)/kt-static: $(DEPS) tests/static_build.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -DKCTL_STATIC -o $@ tests/static_build.c $(LIBS)
$(B)/kt-nothreads: $(DEPS) | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -DKCTL_NO_THREADS -o $@ $(TESTSRC)
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
ETCDDEPS := kctl.h kctl_http_curl.h tests/kt.h tests/etcd_harness.h tests/contract.h examples/dirstore.h $(ETCDSRC) $(B)/etcd-config
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
KUBEDEPS := kctl.h kctl_http_curl.h tests/kt.h tests/kube.h tests/kube_server.h tests/contract.h examples/dirstore.h $(KUBESRC) $(B)/etcd-config
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

MATRIX := $(B)/kt $(B)/kt-clang-c11 $(B)/kt-ndebug $(B)/kt-static $(B)/kt-nothreads

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

# The edge agent runs in the suites too, for 1 s on a fresh state directory:
# it exits 1 unless the device ends equal to the desired state.
AGENT_ENV = EDGE_AGENT_SECONDS=1 EDGE_AGENT_STATE=$(B)/edge-agent-$@
test: $(MATRIX) $(B)/posix-check $(B)/readme-check $(B)/nofiles-check $(CXXCHECKS) $(B)/edge_agent $(B)/hello_controller $(B)/custom_transport $(B)/faultfs-driver $(B)/kt-etcd $(B)/kt-kube
	@rm -rf $(B)/edge-agent-$@ && $(AGENT_ENV) sh tests/matrix.sh $(MATRIX) $(CXXCHECKS) $(B)/edge_agent tests/edge_agent_step.sh $(B)/custom_transport $(B)/faultfs-driver $(B)/kt-etcd $(B)/kt-kube

asan: $(B)/kt-asan $(B)/reconcile_storm-asan $(B)/edge_agent-asan $(B)/custom_transport-asan $(B)/kt-etcd-asan $(B)/kt-kube-asan
	@rm -rf $(B)/edge-agent-$@ && $(AGENT_ENV) KT_EDGE_AGENT=$(B)/edge_agent-asan sh tests/matrix.sh $(B)/kt-asan $(B)/reconcile_storm-asan $(B)/edge_agent-asan tests/edge_agent_step.sh $(B)/custom_transport-asan $(B)/kt-etcd-asan $(B)/kt-kube-asan

tsan: $(B)/kt-tsan $(B)/edge_agent-tsan $(B)/kt-etcd-tsan $(B)/kt-kube-tsan
	@rm -rf $(B)/edge-agent-$@ && $(AGENT_ENV) KT_EDGE_AGENT=$(B)/edge_agent-tsan TSAN_OPTIONS="halt_on_error=1" sh tests/matrix.sh $(B)/kt-tsan $(B)/edge_agent-tsan tests/edge_agent_step.sh $(B)/kt-etcd-tsan $(B)/kt-kube-tsan

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

# The seed's reconcile storm, on the virtual clock.
$(B)/reconcile_storm: kctl.h examples/reconcile_storm.c | $(B)
	gcc $(STD) $(BASE) $(CFLAGS) -o $@ examples/reconcile_storm.c $(LIBS)
$(B)/reconcile_storm-asan: kctl.h examples/reconcile_storm.c | $(B)
	gcc $(STD) $(BASE) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -o $@ examples/reconcile_storm.c $(LIBS)
storm: $(B)/reconcile_storm
	./$(B)/reconcile_storm

$(B)/bench-%: kctl.h bench/%.c bench/bench.h | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ bench/$*.c $(LIBS)
# kctl on real etcd clusters (bench/ETCD.md): needs libcurl and etcd; it
# starts and stops its own clusters and says why when it cannot run.
$(B)/bench-etcd: kctl.h kctl_http_curl.h bench/etcd.c bench/bench.h tests/etcd_harness.c tests/etcd_harness.h $(B)/etcd-config | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ bench/etcd.c tests/etcd_harness.c $(CURL_LIBS) $(LIBS)
# kctl on the Kubernetes API transport against the test API server, in
# its own process over loopback (bench/KUBE.md): needs libcurl; ~30 s.
$(B)/bench-kube: kctl.h kctl_http_curl.h bench/kube.c bench/bench.h tests/kube_server.c tests/kube_server.h $(B)/etcd-config | $(B)
	gcc $(STD) $(BASE) -O2 -DNDEBUG -o $@ bench/kube.c tests/kube_server.c $(CURL_LIBS) $(LIBS)
bench: $(B)/bench-queue $(B)/bench-cache $(B)/bench-e2e $(B)/bench-json $(if $(filter yes,$(KT_CURL)),$(B)/bench-etcd $(B)/bench-kube,)
	./$(B)/bench-queue
	./$(B)/bench-cache
	./$(B)/bench-e2e
	./$(B)/bench-json
ifeq ($(KT_CURL),yes)
	./$(B)/bench-etcd
	./$(B)/bench-kube
else
	@echo "skip bench-etcd, bench-kube: libcurl headers were absent at build time (Debian: apt-get install libcurl4-openssl-dev)"
endif

# A controller on a 3-member etcd cluster through random faults, one after
# the other (tests/test_etcd_faults.c, tef_chaos): SOAK_SECONDS (default
# 300); KT_ETCD_CHAOS_SEED=<n> repeats a run, KT_ETCD_CHAOS_AUTH=1 with auth.
SOAK_SECONDS ?= 300
soak: $(B)/kt-etcd
	KT_REQUIRE_ETCD=1 KT_VERBOSE=1 KT_ETCD_CHAOS=$(SOAK_SECONDS) KT_ONLY=tef_chaos ./$(B)/kt-etcd

# libFuzzer targets, one per parser (clang). `make fuzz` runs each for
# FUZZ_SECONDS (default 120); CI runs `make fuzz-short` (20 s each). New
# inputs go to a scratch copy of the corpus, never into the tree.
FUZZERS := json selector merge_patch memstore_load apisrv etcd kube kubeconfig
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
fuzz: $(addprefix $(B)/fuzz-,$(FUZZERS))
	@for f in $(FUZZERS); do \
	    rm -rf $(B)/corpus-$$f && mkdir -p $(B)/corpus-$$f && cp tests/fuzz_corpus/$$f/* $(B)/corpus-$$f/ && \
	    ./$(B)/fuzz-$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(B)/ \
	        $(B)/corpus-$$f > $(B)/fuzz-$$f.log 2>&1; rc=$$?; tail -n 12 $(B)/fuzz-$$f.log; \
	    if [ $$rc -ne 0 ]; then echo "fuzz-$$f FAILED (see $(B)/fuzz-$$f.log)"; exit 1; fi; \
	done
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20

# The -Os footprint of the demo (the queue, limiters, clock) and of the
# whole implementation linked in, as `size` prints them.
size: | $(B)
	gcc $(STD) $(BASE) -Os -DNDEBUG -o $(B)/storm-Os examples/reconcile_storm.c $(LIBS)
	gcc $(STD) $(BASE) -Os -DNDEBUG -DKCTL_IMPLEMENTATION -x c -c kctl.h -o $(B)/kctl-Os.o
	@size $(B)/storm-Os $(B)/kctl-Os.o

clean:
	rm -rf $(B)
