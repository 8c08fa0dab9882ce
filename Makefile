# The two commands of the README:
#   make run    install what is missing, build, run the main job
#   make test   the same, then the whole test suite
# and, for CI, `make test-sanitize`: the suite under ASan + UBSan.
#
# The Debian packages are installed by scripts/setup-deps.sh (as root), or
# named for you to install (as any other user).

BUILD      ?= build
SAN_BUILD  ?= build-sanitize
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
WERROR     ?= ON
CMAKE_ARGS ?=
MRC        := $(BUILD)/tools/mrc/mrc

# The nested makes of the build tree say nothing of the directories they
# enter: a user reads what was built and what failed, not gmake's moves.
MAKEFLAGS  += --no-print-directory

TSAN_BUILD   ?= build-tsan
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

.PHONY: all setup build run test test-sanitize test-tsan bench fuzz format format-check clean

all: build

setup:
	@sh scripts/setup-deps.sh

# A build says one line, and on failure its errors and where the whole
# log is: a newcomer reads what went wrong, not a hundred progress lines.
QUIET_BUILD = cmake --build $(1) -j $(JOBS) >$(1)/build.log 2>&1 || \
	{ grep -E -A3 ': (fatal )?error|undefined reference|CMake Error' $(1)/build.log | \
	  head -60; echo "the build failed; the whole log: $(1)/build.log"; \
	  exit 1; }

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	    -DMRC_WERROR=$(WERROR) $(CMAKE_ARGS) >/dev/null
	@echo "building mrc in $(BUILD)/ (log: $(BUILD)/build.log)"
	@$(call QUIET_BUILD,$(BUILD))

# The main job: every collective on real data in threads on seed 004's
# hcm8, for each strategy that applies, checked element by element.
run: build
	@$(MRC) run

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-sanitize: setup
	@cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DMRC_SANITIZE=ON -DMRC_WERROR=$(WERROR) $(CMAKE_ARGS) >/dev/null
	@echo "building mrc with ASan and UBSan in $(SAN_BUILD)/ (log: $(SAN_BUILD)/build.log)"
	@$(call QUIET_BUILD,$(SAN_BUILD))
	@cd $(SAN_BUILD) && \
	    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    ctest --output-on-failure -j $(JOBS)

# Benchmarks (figures for docs/performance.md; not tests).
bench: build
	@$(BUILD)/bench/bench_compile
	@echo
	@$(BUILD)/bench/bench_threads

# ThreadSanitizer (clang) over the multi-rank tests: the threads transport
# is lock-free, and this is what proves its ordering (messages: the rings;
# memory semantics: the direct families; the tree and streaming runs take
# the same paths as the rings). The sweep is thin, as under ASan: every
# path of every collective (chunks, fragments, roots, in place or not),
# not every dtype x op at every count, whose kernels hold no shared state.
test-tsan:
	@sh scripts/setup-deps.sh clang
	@CC=clang cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_C_FLAGS="-fsanitize=thread" \
	    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
	    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target test_collectives
	@cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
	    MRC_TEST_SWEEP=thin \
	    ctest --output-on-failure -j $(JOBS) -R '^test_collectives(_direct1|_direct2|_hier)?$$'

# Coverage-guided fuzzing of every parser (clang's libFuzzer): topology,
# embedding, program image, fabric exchange, workload, each for
# FUZZ_SECONDS, seeded with the generators' output (the workloads: the
# examples and a Chakra trace); one line a target, and a failure with the
# reproducer in $(FUZZ_BUILD)/ if any finds a crash, leak or hang.
fuzz: build
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DMRC_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_topo fuzz_embed \
	    fuzz_program fuzz_fabric fuzz_workload fabric_seeds
	@sh scripts/fuzz.sh $(FUZZ_BUILD) $(MRC) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The house style (.clang-format) over every C file; CI runs format-check
# and fails on a file that differs from it.
format:
	@sh scripts/setup-deps.sh clang-format
	@clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@sh scripts/setup-deps.sh clang-format
	@clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && \
	    echo "format: every C file is in the house style"

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
