# amla-lab -- build, test, run, install
PREFIX ?= /usr/local
DEB_PKGS = libmpfr-dev libgmp-dev libgsl-dev libopenblas-openmp-dev libopenmpi-dev openmpi-bin pkg-config
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
SRC = $(wildcard src/*.c)
LIB_SRC = $(filter-out src/main.c,$(SRC))
LIB_OBJ = $(LIB_SRC:src/%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard tests/t-*.c)
TEST_BIN = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all deps run test unit check-asan check-valgrind fuzz install clean results bench

BIN ?= amla-lab

all: $(BIN)

deps:
	@sh scripts/deps.sh $(DEB_PKGS)

$(BIN): $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/%.o: src/%.c $(wildcard src/*.h) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# the array cast loops must vectorize (src/fmt_cast.c says why these flags change no result)
$(BUILD)/fmt_cast.o: OPT += -O3 -fno-trapping-math

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ) tests/check.h | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -Isrc -o $@ $< $(LIB_OBJ) $(LIBS)

$(BUILD) $(BUILD)/tests:
	mkdir -p $@

# The default experiment: AMLA Table 3's N(0, 16) cell, 10 samples (about 10 s on 2 cores).
RUN_SAMPLES ?= 10
run: deps
	$(MAKE) all
	./amla-lab run --dist normal --sigma 4 --samples $(RUN_SAMPLES)

unit: $(TEST_BIN) $(BIN)

# The whole suite: unit tests per module, then the command-line tests.
test: deps
	$(MAKE) unit
	sh tests/run.sh $(BUILD) ./amla-lab

# Address + undefined-behaviour sanitizers over the same suite (AMLA_QUICK: smaller loops).
SAN = -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
check-asan: deps
	$(MAKE) BUILD=build-asan BIN=build-asan/amla-lab OPT="$(SAN)" unit
	ASAN_OPTIONS=detect_leaks=1 AMLA_QUICK=1 sh tests/run.sh build-asan build-asan/amla-lab

check-valgrind: deps
	@sh scripts/deps.sh valgrind
	$(MAKE) unit
	AMLA_QUICK=1 AMLA_WRAP="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite" \
		sh tests/run.sh $(BUILD) ./amla-lab

# libFuzzer on the .npy reader: FUZZ_RUNS executions (default one million).
FUZZ_RUNS ?= 1000000
fuzz: deps
	@sh scripts/deps.sh libclang-rt-14-dev clang
	mkdir -p build-fuzz
	clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
		-Isrc -o build-fuzz/fuzz-npy fuzz/fuzz_npy.c src/io.c src/fmt.c src/fmt_cast.c src/err.c -lm
	mkdir -p build-fuzz/corpus
	./build-fuzz/fuzz-npy -runs=$(FUZZ_RUNS) -max_len=4096 build-fuzz/corpus fuzz/seeds

# Speed against plain BLAS attention of the same shape, measured in the same run (the issue's
# targets; prints a table). BENCH_REPS runs per stage, medians.
BENCH_REPS ?= 5
bench: deps
	$(MAKE) all
	$(CC) $(ALL_CFLAGS) -Isrc -o $(BUILD)/bench bench/bench.c $(LIB_OBJ) $(LIBS)
	$(BUILD)/bench $(BENCH_REPS) 2

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 amla-lab $(DESTDIR)$(PREFIX)/bin/amla-lab
	install -m 644 man/amla-lab.1 $(DESTDIR)$(PREFIX)/share/man/man1/amla-lab.1

clean:
	rm -rf build build-asan build-fuzz amla-lab

# Regenerate every result under results/ (each script writes its own files atomically;
# an interrupted sweep resumes). Needs gnuplot for the plots.
results: all
	@sh scripts/deps.sh gnuplot-nox
	sh scripts/foundation.sh
	sh scripts/run-experiments.sh
	sh scripts/amla-ablation.sh
	sh scripts/snapmla-claims.sh
	sh scripts/gpu-check.sh
