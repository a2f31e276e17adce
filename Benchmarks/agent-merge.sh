#!/usr/bin/env bash
# Issue 19's merge through the agent alone (agent-formats.sh measures it after get/put/list): a 10,000-entry vault
# held by the agent and a copy of it, FRESH_MERGES merges each bringing 100 new changes on both sides; the agent's
# CPU and the wall time per `vault merge` (target: ≤ 50 ms).
#
#     VAULT_BIN=.build-rel/release/vault FRESH_MERGES=10 Benchmarks/agent-merge.sh
#     PERF_OUT=/tmp/merge.data ... Benchmarks/agent-merge.sh    # and a perf profile of the agent during the merges
#
# BENCH_TEST_HOOK_KDF=1 VAULT_TESTING_INSECURE_KDF=1: the test hook's KDF for the fixtures (each of the other copy's
# puts runs the KDF: minutes otherwise); the merges run no KDF either way.
set -euo pipefail
SIZES=10000
FRESH_MERGES=${FRESH_MERGES:-10}
source "$(dirname "$0")/agent-fixtures.sh"
prepare_merge
fresh_merges
