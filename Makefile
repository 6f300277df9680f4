# amla-lab -- build, test, run, install
PREFIX ?= /usr/local
DEB_PKGS = libmpfr-dev libgmp-dev libgsl-dev libopenblas-openmp-dev libopenmpi-dev openmpi-bin pkg-config xz-utils python3 python3-numpy python3-pytest
PKGS = mpfr gmp gsl ompi-c
# OpenBLAS's OpenMP build: called from the lab's OpenMP threads it runs single-threaded and,
# unlike the pthread build, keeps no worker threads spinning beside them. Linked by path (and
# rpath), so the system's BLAS alternative does not matter.
ARCH := $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
BLAS_DIR = /usr/lib/$(ARCH)/openblas-openmp
BLAS_CFLAGS = -I/usr/include/$(ARCH)/openblas-openmp
BLAS_LIBS = -L$(BLAS_DIR) -Wl,-rpath,$(BLAS_DIR) -lopenblas
CC ?= cc

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
BASE_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -ffp-contract=off -fopenmp -g
OPT ?= -O2
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lmpfr -lgmp -lgsl -lgslcblas -lmpi)
ALL_CFLAGS = $(BASE_CFLAGS) $(OPT) $(BLAS_CFLAGS) $(PKG_CFLAGS) $(CFLAGS)
LIBS = $(BLAS_LIBS) $(PKG_LIBS) -lm

BUILD ?= build
# the builds that make test, check-asan, check-valgrind and fuzz start run one compiler per processor, unless
# make was given -j itself (a serial build of the suite's three library builds was most of CI's time)
NPROC := $(shell nproc 2>/dev/null || echo 1)
JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))
# an interpreter with numpy (Debian's python3-numpy), for the scripts that need it
PY_NUMPY = $(shell for p in /usr/bin/python3 python3; do $$p -c 'import numpy' 2>/dev/null && { echo $$p; break; }; done)
# src/MODULE/*.c (docs/ARCHITECTURE.md); includes are written from src/: "num/fmt/fmt.h"
SRC = $(sort $(shell find src -name '*.c'))
HDR = $(shell find src -name '*.h')
LIB_SRC = $(filter-out src/cli/%.c,$(SRC))
CLI_SRC = $(filter src/cli/%.c,$(SRC))
LIB_OBJ = $(LIB_SRC:src/%.c=$(BUILD)/%.o)
CLI_OBJ = $(CLI_SRC:src/%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard tests/t-*.c)
TEST_BIN = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all deps run test unit check-asan test-asan check-valgrind fuzz fuzz-deps fuzz-build install clean results bench bench-tc bench-gemm

BIN ?= amla-lab

all: $(BIN)

deps:
	@sh scripts/dev/deps.sh $(DEB_PKGS)

$(BIN): $(CLI_OBJ) $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/%.o: src/%.c $(HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -Isrc -c -o $@ $<

# the array cast loops must vectorize (src/num/fmt/fmt_cast.c says why these flags change no result)
$(BUILD)/num/fmt/fmt_cast.o: OPT += -O3 -fno-trapping-math

# tests/*.c other than t-*.c are helpers every test links (golden_mpfr: the all-MPFR reference)
TEST_HELP = $(filter-out tests/t-%.c,$(wildcard tests/*.c))
$(BUILD)/tests/%: tests/%.c $(TEST_HELP) $(LIB_OBJ) $(wildcard tests/*.h) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Isrc -Itests -o $@ $< $(TEST_HELP) $(LIB_OBJ) $(LIBS)

$(BUILD) $(BUILD)/tests:
	mkdir -p $@

# The default experiment: AMLA Table 3's N(0, 16) cell, 10 samples (about 10 s on 2 cores).
RUN_SAMPLES ?= 10
run: deps
	$(MAKE) all
	./amla-lab run --dist normal --sigma 4 --samples $(RUN_SAMPLES)

unit: $(TEST_BIN) $(BIN) $(BUILD)/bench $(BUILD)/tc_kernel

# the bench program (make bench runs it; make test only builds it, so that it cannot rot)
# (bench.c: the arguments and the run; stages.c: timing; report.c: the markdown report; gemm.c: --gemm;
# checkspeed.c: `check` on a prefill and an MLA decode case, --check; shapes.c: kernels on shapes of their own)
BENCH_SRC = bench/bench.c bench/stages.c bench/report.c bench/gemm.c bench/checkspeed.c bench/shapes.c bench/machine.c \
    bench/floors.c
$(BUILD)/bench: $(BENCH_SRC) bench/bench.h bench/machine.h bench/floors.h $(LIB_OBJ) $(HDR) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -Isrc -o $@ $(BENCH_SRC) $(LIB_OBJ) $(LIBS)

# the tensor-core block model's cycles per row, product and eight columns (bench/tc_kernel.c)
$(BUILD)/tc_kernel: bench/tc_kernel.c bench/floors.c bench/floors.h $(LIB_OBJ) $(HDR) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -Isrc -o $@ bench/tc_kernel.c bench/floors.c $(LIB_OBJ) $(LIBS)

bench-tc: deps
	$(MAKE) $(BUILD)/tc_kernel
	$(BUILD)/tc_kernel

# the lab's FP32 and FP64 GEMMs against OpenBLAS's on the attention's two products, one thread, OpenBLAS on the
# kernels make bench takes (build/bench --gemm)
bench-gemm: deps
	$(MAKE) all $(BUILD)/bench
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bench --gemm --reps 9

# The whole suite: unit tests per module, the command-line tests, and a short run of every
# fuzz harness (FUZZ_SMOKE_S seconds each).
test: deps fuzz-deps
	$(MAKE) $(JOBS) unit fuzz-build
	AMLA_FUZZ_SMOKE_S=$(FUZZ_SMOKE_S) sh tests/run.sh $(BUILD) ./amla-lab

# Address + undefined-behaviour sanitizers over the same suite (AMLA_QUICK: smaller loops).
SAN = -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
check-asan: deps
	$(MAKE) $(JOBS) BUILD=build-asan BIN=build-asan/amla-lab OPT="$(SAN)" unit
	ASAN_OPTIONS=detect_leaks=1 AMLA_QUICK=1 sh tests/run.sh build-asan build-asan/amla-lab

test-asan: check-asan

# About 300 of the command-line tests' runs go through valgrind, each a second or more: inlined functions' debug
# information left unread (a report names the function an inlined one was inlined into) takes about a tenth
# off a small run (`amla-lab run --ctx 256 --heads 4 --dk 64 --dv 32 --block 64 --samples 2` under this
# valgrind, three runs each: 2.45 s against 2.77 s here). VG_FAST= reads it.
VG_FAST ?= --read-inline-info=no
check-valgrind: deps
	@sh scripts/dev/deps.sh valgrind
	$(MAKE) $(JOBS) unit
	AMLA_QUICK=1 AMLA_WRAP="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite $(VG_FAST)" \
		sh tests/run.sh $(BUILD) ./amla-lab

# libFuzzer harnesses (fuzz/fuzz_NAME.c), one per parser: .npy, experiment files, the sample
# store, variant specs, run options, --load's files and shapes, cast's input. The library is
# built again with clang, ASan and UBSan. `make fuzz`: FUZZ_RUNS executions of each (default
# one million), the corpus kept in build-fuzz/corpus/NAME; fuzz/seeds/NAME holds the seeds and
# every input that once crashed. `make test` runs each for FUZZ_SMOKE_S seconds.
FUZZ_TARGETS = npy exp store spec opts load cast
FUZZ_RUNS ?= 1000000
FUZZ_SMOKE_S ?= 3
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	$(BLAS_CFLAGS) $(PKG_CFLAGS)
FUZZ_OBJ = $(LIB_SRC:src/%.c=build-fuzz/obj/%.o)
FUZZ_BIN = $(FUZZ_TARGETS:%=build-fuzz/fuzz-%)

# The tensor-core kernels (acc_tc_f32x8.c, acc_tc_f32x16.c: each block size's loops unrolled into every path) take
# clang at -O1 minutes each under its sanitizers (on the Emerald Rapids VM: 80-86 s each with ASan alone, longer
# with UBSan; 8 s with neither; the whole rest of the library: seconds), two thirds of this build. No harness
# reaches them (they parse input), and make check-asan and check-valgrind run them under GCC's ASan and UBSan and
# under valgrind, so this build compiles them uninstrumented.
build-fuzz/obj/num/acc/acc_tc_f32x8.o build-fuzz/obj/num/acc/acc_tc_f32x16.o: FUZZ_FILE_CFLAGS = -fno-sanitize=all

build-fuzz/obj/%.o: src/%.c $(HDR)
	@mkdir -p $(@D)
	@echo "  CLANG   $<"
	@clang $(FUZZ_CFLAGS) $(FUZZ_FILE_CFLAGS) -fsanitize=fuzzer-no-link -Isrc -c -o $@ $<

build-fuzz/fuzz-%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJ)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -Isrc -Ifuzz -o $@ $< $(FUZZ_OBJ) $(LIBS)

fuzz-deps:
	@sh scripts/dev/deps.sh libclang-rt-14-dev clang

fuzz-build: fuzz-deps
	$(MAKE) $(JOBS) $(FUZZ_BIN)

fuzz: deps fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p build-fuzz/corpus/$$t; \
		echo "fuzz-$$t: $(FUZZ_RUNS) runs"; \
		ASAN_OPTIONS=detect_leaks=1 ./build-fuzz/fuzz-$$t -runs=$(FUZZ_RUNS) -max_len=4096 -print_final_stats=1 \
			build-fuzz/corpus/$$t fuzz/seeds/$$t 2>&1 | grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done" || exit 1; \
	done

# Speed against plain BLAS attention of the same shape, measured in the same run: every
# registered variant and accumulation model, per core and on all cores (prints a table and
# writes results/bench-KIND.md, with a profile of the costly stages where perf is installed).
# BENCH_REPS runs per stage, medians. BENCH_NUMPY: the numpy script Golden + base are set
# against (its interface is bench/numpy_ref.py's: --reps --heads --ctx --dk --dv, prints the
# median seconds of its Golden and its base).
# BENCH_OUT: the report, results/bench-KIND.md (KIND: `build/bench --kind`, the processor's generation and vector
# width), beside other processors' runs; results/bench.md indexes them (scripts/dev/bench-index.sh). The bench's
# processes run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: OpenBLAS's own kernel choice for the processor
# (where it falls back to pre-AVX kernels on a model it does not know, the bench runs on its widest kernels for the
# processor's extensions and says so).
BENCH_REPS ?= 5
BENCH_NUMPY ?= bench/numpy_ref.py
BENCH_OUT ?= results/bench-$$($(BUILD)/bench --kind).md
bench: deps
	$(MAKE) all $(BUILD)/bench
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bench --reps $(BENCH_REPS) --numpy $(BENCH_NUMPY) --md $(BENCH_OUT).tmp
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE sh scripts/dev/bench-profile.sh $(BUILD)/bench >>$(BENCH_OUT).tmp
	mv $(BENCH_OUT).tmp $(BENCH_OUT)
	sh scripts/dev/bench-index.sh results >results/bench.md.tmp
	mv results/bench.md.tmp results/bench.md

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 amla-lab $(DESTDIR)$(PREFIX)/bin/amla-lab
	install -m 644 man/amla-lab.1 $(DESTDIR)$(PREFIX)/share/man/man1/amla-lab.1

clean:
	rm -rf build build-asan build-fuzz amla-lab

# Regenerate every result under results/ (each script writes its own files atomically;
# an interrupted sweep resumes). Needs gnuplot for the plots.
results: all
	@sh scripts/dev/deps.sh gnuplot-nox
	sh scripts/checks/inputs.sh
	sh scripts/results/foundation.sh
	sh scripts/results/run-experiments.sh
	sh scripts/results/amla-ablation.sh
	sh scripts/results/snapmla-claims.sh
	sh scripts/results/fa3-vs-fa2.sh
	sh scripts/results/snapmla-claims.sh fp8-kernels
	sh scripts/checks/gpu-check.sh
	sh scripts/checks/sfu-check.sh
	sh scripts/checks/splitk-check.sh
	sh scripts/checks/sdpa-check.sh
	sh scripts/checks/fa2-check.sh
	sh scripts/checks/fa3-check.sh
	sh scripts/checks/serving-check.sh
	sh scripts/checks/flashmla-check.sh
	sh scripts/checks/flashmla-check.sh tests/data/flashmla results/flashmla-check-lab-captures.md \
	    "The captures: tests/data/flashmla, a3 and a6 of ../shared/captures/flashmla, entry 2 of its a4 alone (a4-b2), and f2 of scripts/device/capture_flashmla.py (FP16, sigma 4)."
	VARIANT=flashmla-etap sh scripts/checks/flashmla-check.sh tests/data/etap results/etap-check.md
	sh scripts/checks/flashmla-fp8-check.sh
	sh scripts/checks/prefill-check.sh
	sh scripts/results/prefill-builds.sh
	$(PY_NUMPY) scripts/results/indexer-selection.py
	$(PY_NUMPY) scripts/checks/etap-table1.py tests/data/etap/table1.npz tests/data/etap/meta.json results/etap-kernel-table1.md
