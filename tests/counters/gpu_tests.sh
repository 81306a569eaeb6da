#!/bin/bash
# tests/counters/gpu_tests.sh — hook for tests/gpu/run.sh (part 4): the counters GPU checks live
# in tests/gpu/counters.sh. Usage: gpu_tests.sh BUILD_DIR
exec bash "$(dirname "$0")/../gpu/counters.sh" "$@"
