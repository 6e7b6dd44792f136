#!/usr/bin/env bash
# Runs the fuzz targets for a given number of executions each, with the
# committed seeds, and prints executions, exec/s and findings per target.
# Installs the nightly toolchain and cargo-fuzz first when they are missing.
#
#   fuzz/run.sh [--runs N] [--seconds S] [--jobs J] [--keep-going] [--sanitizer none|address] [TARGET...]
#
# TARGET: walker, image, journal, hdfs, at_rest (default: all five). --runs: executions per
# target (default 20000). --seconds: stop a target after S seconds even if
# it has not made N executions. --jobs: J worker processes (libFuzzer fork
# mode; default 1, in-process). --keep-going: run on after a crash (fork
# mode) and save every crash, instead of stopping at the first. Crashing
# inputs go to fuzz/artifacts/TARGET/, new inputs to fuzz/grown/TARGET/
# (both ignored by git); the committed seeds in fuzz/corpus/TARGET/ are only
# read. Exit status: 0 when no target found anything, 1 when one did, 2 on a
# usage or build error.
set -euo pipefail

runs=20000
seconds=0
keep_going=0
jobs=1
sanitizer=none
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --keep-going) keep_going=1; shift ;;
        --jobs) jobs="$2"; shift 2 ;;
        --sanitizer) sanitizer="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        walker|image|journal|hdfs|at_rest) targets+=("$1"); shift ;;
        *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(walker image journal hdfs at_rest)

cd "$(dirname "$0")/.."
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "run.sh: installing the nightly toolchain" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "run.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

# Optimized, with debug assertions and overflow checks (cargo-fuzz's
# default without -O); no sanitizer by default: the crates are free of
# unsafe code apart from the loader's mmap, and it doubles the speed.
build=(-s "$sanitizer")
cargo +nightly fuzz build "${build[@]}" "${targets[@]}" || exit 2

found=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/grown/$t" "fuzz/artifacts/$t"
    case "$t" in
        image|hdfs|at_rest) max_len=16384 ;;
        *) max_len=4096 ;;
    esac
    before=$(ls "fuzz/artifacts/$t" | grep -c -E '^(crash|oom|timeout|leak)-' || true)
    opts=(-runs="$runs" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1)
    # Hadoop images: any single allocation over 512 MiB is a finding (sizes
    # taken from the file unbounded), and 10 s on a 16 KiB input a hang.
    [ "$t" = hdfs ] && opts+=(-malloc_limit_mb=512 -timeout=10)
    # Pieces at rest: a plain length claimed in the index is never
    # allocated beyond 255 times the stored bytes (a decompression bomb).
    [ "$t" = at_rest ] && opts+=(-malloc_limit_mb=512)
    [ "$seconds" -gt 0 ] && opts+=(-max_total_time="$seconds")
    if [ "$jobs" -gt 1 ] || [ "$keep_going" = 1 ]; then
        opts+=(-fork="$jobs")
    fi
    [ "$keep_going" = 1 ] && opts+=(-ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    log="fuzz/artifacts/$t/run.log"
    echo "== $t: ${runs} executions$([ "$seconds" -gt 0 ] && echo " or ${seconds} s") (log: $log)"
    start=$(date +%s)
    set +e
    cargo +nightly fuzz run "${build[@]}" "$t" "fuzz/grown/$t" "fuzz/corpus/$t" -- "${opts[@]}" >"$log" 2>&1
    rc=$?
    set -e
    elapsed=$(( $(date +%s) - start ))
    # Plain mode prints final stats; fork mode prints progress lines.
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    rate=$(grep -o 'stat::average_exec_per_sec: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    if [ -z "$execs" ]; then
        execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
        rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    fi
    # Fork mode's last line may say 0 exec/s: fall back to the average.
    if [ -n "$execs" ] && [ "${rate:-0}" = 0 ] && [ "$elapsed" -gt 0 ]; then
        rate=$((execs / elapsed))
    fi
    after=$(ls "fuzz/artifacts/$t" | grep -c -E '^(crash|oom|timeout|leak)-' || true)
    new=$((after - before))
    echo "$t: ${execs:-?} executions in ${elapsed} s (${rate:-?} exec/s), findings: $new, libFuzzer exit $rc"
    if [ "$new" -gt 0 ] || [ "$rc" -ne 0 ]; then
        found=1
        ls -t "fuzz/artifacts/$t" | grep -E '^(crash|oom|timeout|leak)-' | head -n "$((new > 0 ? new : 1))" |
            sed "s|^|  fuzz/artifacts/$t/|"
        grep -m1 -E "panicked at|ERROR: libFuzzer" "$log" | sed 's/^/  /' || true
    fi
done
exit $found
