# omniprof — developer entry points. Quick start: `make demo`, then `make test`.
# Only `deps` installs Debian packages, and it says which and why (scripts/deps.txt); `demo` and
# `test` go through it as a step of their own, so the README's two commands work on a fresh
# Debian 12. The other targets only check for them (check-deps) and name the `make deps` command
# when one is missing.
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
FUZZ_SECONDS ?= 60
FUZZ ?=

.PHONY: all build deps check-deps test test-sanitize fuzz bench demo install deb clean format

all: build

deps:
	@./scripts/deps.sh

check-deps:
	@./scripts/deps.sh --check

$(BUILD)/CMakeCache.txt:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: $(BUILD)/CMakeCache.txt
	@cmake --build $(BUILD) -j $(JOBS)

# Skipped tests (GPU tests without a GPU) say why: their SKIP lines are printed after the run,
# then ctest's closing line once more, so that it stays the last line.
test: deps build
	@cd $(BUILD) && rm -f ctest.rc && { ctest --output-on-failure -j $(JOBS) --timeout 600; echo $$? > ctest.rc; } | tee ctest.log; \
	  grep -h '^SKIP:' Testing/Temporary/LastTest.log 2>/dev/null | sort | uniq -c | sed 's/^ */skipped tests: /'; \
	  grep -E '^[0-9]+% tests passed' ctest.log | tail -1; \
	  exit $$(cat ctest.rc 2>/dev/null || echo 1)

# ASan+UBSan over every test; TSan over the tests labelled 'threading'.
test-sanitize: check-deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DOMNIPROF_SANITIZE="address;undefined" >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE no-sanitize --timeout 900
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DOMNIPROF_SANITIZE=thread >/dev/null
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) -L threading -LE no-sanitize --timeout 900

# Every libFuzzer harness of tests/fuzz for FUZZ_SECONDS each (FUZZ=NAME... picks some), over
# its committed corpus; clang builds them in build-fuzz/. Figures: build-fuzz/fuzz-summary.txt.
fuzz: check-deps
	cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DOMNIPROF_FUZZ=ON -DOMNIPROF_SANITIZE="address;undefined" >/dev/null
	cmake --build build-fuzz -j $(JOBS) --target omniprof-fuzz-harnesses
	./tests/fuzz/run.sh all build-fuzz $(FUZZ_SECONDS) $(FUZZ)

bench: check-deps build
	@./bench/run.sh $(BUILD)

demo: deps build
	@./scripts/demo.sh $(BUILD)

# clang-format (.clang-format) over the C files changed against FORMAT_BASE (default: main), in
# place; the tree is formatted as it is touched, not wholesale.
FORMAT_BASE ?= main
format:
	@files=$$(git diff --name-only --diff-filter=AM $$(git merge-base HEAD $(FORMAT_BASE)) -- '*.c' '*.h' '*.cu'); \
	  if [ -n "$$files" ]; then clang-format -i $$files && echo "formatted: $$files"; else echo "no changed C files"; fi

# A relocatable tree under PREFIX (docs/install.md); `make deb`: the Debian package, in
# $(BUILD)/package/.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

deb: build
	@cd $(BUILD) && cpack -G DEB --config CPackConfig.cmake

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
