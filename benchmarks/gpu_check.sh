#!/usr/bin/env bash
# Everything the GPU machine runs, in one call: build against its torch, the tests,
# compute-sanitizer on every kernel, then the benchmarks (on a quiet GPU, last).
#   benchmarks/gpu_check.sh [build | wheel] [test] [sanitize] [reliability] [dtensor] [stages]
#                           [sweep] [dims] [random] [small] [cpu] [cpu-random] [host] [accuracy]
#                           [exact] [invariance] [resources] [ncu] [ncu-dims] [models]
#   (default: build test sanitize stages sweep dims random small)
# Logs and results go to $LOGS (default ./gpu-logs); with $OUT set (the device tool's
# folder, which takes back a few files only) they are packed into $OUT/logs.tgz at the
# end, the last lines of each step's summary printed. TESTS selects
# the tests (pytest arguments, default: tests); DIMS_FILTER the dims step's cases;
# RELIABILITY the reliability step's parts (default: all of them, in the order below;
# multi-gpu skips with one GPU) and FUZZ_EXAMPLES its examples a property test;
# NCU_DIMS_ARGS the ncu-dims step's cases (benchmarks/ncu_dims.py's arguments); NO_COMPILE=1
# leaves torch.compile out of the random and dims steps; SANITIZE_SECONDS limits each
# compute-sanitizer run (default 400) and SANITIZE_KERNELS names the kernels it runs
# (default: every one; "exact" alone, say, to reach its kernels in the time given).
set -uo pipefail
cd "$(dirname "$0")/.."
PACK=${OUT:-}
OUT=${LOGS:-gpu-logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=${*:-build test sanitize stages sweep dims random small}
pack() { [ -z "$PACK" ] || tar czf "$PACK/logs.tgz" -C "$OUT" . ; }
trap pack EXIT
status=0
note() { echo "=== $* ($(date +%T))"; }

for step in $steps; do
  case $step in
    build)
      note build
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.mem --format=csv,noheader
      python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
      python3 -m pip install -q -r requirements.txt >/tmp/build.log 2>&1 &&
        python3 -m pip install --no-build-isolation -e . >>/tmp/build.log 2>&1 ||
        { cp /tmp/build.log "$OUT/"; tail -40 /tmp/build.log; exit 1; }
      # libstdc++ must be the process's shared one (setup.py, LINK_ARGS, says why).
      so=$(ls warpreduce_torch/_C*.so)
      readelf -d "$so" | grep -q 'libstdc++.so' && echo "libstdc++: shared" ||
        { echo "libstdc++: linked statically into $so"; status=1; }
      ;;
    wheel)
      # Instead of build: the wheel as a machine without a GPU builds it (setup.py's
      # DEFAULT_CUDA_ARCHS), the architectures it holds listed, and its library put in
      # the checkout so that the steps after run the wheel's code (TORCH_CUDA_ARCH_LIST,
      # which the GPU machine's environment sets, left out). nvcc compiles a file's
      # architectures side by side (--threads 0) to keep the call short.
      note "wheel, built with no GPU visible"
      rm -rf build dist-wheel /tmp/wheel
      env -u TORCH_CUDA_ARCH_LIST CUDA_VISIBLE_DEVICES= NVCC_APPEND_FLAGS="--threads 0" \
        python3 -m pip wheel --no-build-isolation --no-deps -w dist-wheel . >/tmp/wheel.log 2>&1 ||
        { cp /tmp/wheel.log "$OUT/"; tail -40 /tmp/wheel.log; exit 1; }
      ls -l dist-wheel
      # Installed too, for the scripts run from outside the checkout's root.
      python3 -m pip install -q --no-deps --force-reinstall dist-wheel/*.whl >>/tmp/wheel.log 2>&1 || status=1
      python3 -m zipfile -e dist-wheel/*.whl /tmp/wheel && cp /tmp/wheel/warpreduce_torch/_C*.so /tmp/wheel/warpreduce_torch/_build_info.py warpreduce_torch/
      cuobjdump --list-elf warpreduce_torch/_C*.so | grep -o 'sm_[0-9]*' | sort -u | tr '\n' ' '
      cuobjdump --list-ptx warpreduce_torch/_C*.so | grep -o 'sm_[0-9]*' | sort -u | sed 's/^/ptx: /'
      python3 -c 'import warpreduce_torch as wr; print(wr.build_info())' || status=1
      ;;
    test)
      note tests
      python3 -m pytest -q -p no:cacheprovider --maxfail=50 ${TESTS:-tests} >"$OUT/test.log" 2>&1 || status=1
      tail -15 "$OUT/test.log"
      ;;
    sanitize)
      note compute-sanitizer
      tools="memcheck racecheck synccheck initcheck"
      for tool in $tools; do
        PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "${SANITIZE_SECONDS:-400}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
          python3 benchmarks/sanitize.py ${SANITIZE_KERNELS:+--kernels $SANITIZE_KERNELS} >"$OUT/sanitize-$tool.log" 2>&1 &
      done
      # CUDA graph capture needs the caching allocator: the scratch part again with it.
      for tool in initcheck racecheck; do
        timeout "${SANITIZE_SECONDS:-400}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
          python3 benchmarks/sanitize.py --part scratch >"$OUT/sanitize-graph-$tool.log" 2>&1 &
      done
      for job in $(jobs -p); do wait "$job" || status=1; done
      for tool in $tools graph-initcheck graph-racecheck; do
        echo "--- $tool"; grep -E "ERROR SUMMARY|Error|error|ok$" "$OUT/sanitize-$tool.log" | tail -12
      done
      cat "$OUT"/sanitize-*.log >"$OUT/sanitize.log" && rm "$OUT"/sanitize-*.log
      ;;
    reliability)
      # Under load and faults (benchmarks/stress/, tests/test_reliability.py,
      # tests/test_fuzz.py): the parts run side by side (separate processes: each checks
      # its own memory), each under a time limit, its log in $OUT/reliability-PART.log
      # and its summary lines here. About 3 minutes on one H200.
      note reliability
      part() {  # name, seconds allowed, command...
        local name=$1 limit=$2
        shift 2
        timeout "$limit" "$@" >"$OUT/reliability-$name.log" 2>&1
        echo $? >"$OUT/reliability-$name.rc"
      }
      parts=${RELIABILITY:-tests concurrency stream-churn oom memory memory-cpu concurrency-cpu multi-gpu degenerate}
      for what in $parts; do
        case $what in
          tests) WARPREDUCE_FUZZ_EXAMPLES=${FUZZ_EXAMPLES:-3000} part tests 300 \
            python3 -m pytest -q -p no:cacheprovider tests/test_reliability.py tests/test_fuzz.py & ;;
          concurrency) part concurrency 150 python3 benchmarks/stress/concurrency.py --threads 8 --seconds 30 & ;;
          stream-churn) part stream-churn 180 python3 benchmarks/stress/stream_churn.py --streams 3000 & ;;
          oom) part oom 120 python3 benchmarks/stress/oom.py & ;;
          memory) part memory 300 python3 benchmarks/stress/memory.py --device cuda --calls 100000 & ;;
          memory-cpu) part memory-cpu 180 python3 benchmarks/stress/memory.py --device cpu --calls 50000 & ;;
          concurrency-cpu) part concurrency-cpu 60 python3 benchmarks/stress/concurrency.py --device cpu --threads 8 --seconds 10 & ;;
          multi-gpu) part multi-gpu 150 python3 benchmarks/stress/multi_gpu.py --threads 4 --seconds 30 & ;;
          degenerate) part degenerate 180 python3 benchmarks/degenerate.py & ;;
          *) echo "unknown reliability part $what"; status=1 ;;
        esac
      done
      wait
      for what in $parts; do
        rc=$(cat "$OUT/reliability-$what.rc" 2>/dev/null || echo missing)
        [ "$rc" = 0 ] || status=1
        echo "--- $what (exit $rc$([ "$rc" = 124 ] && echo ', timed out'))"
        if [ "$what" = degenerate ]; then
          cat "$OUT/reliability-$what.log"
        else
          grep -E "PASS|FAIL|SKIP|HANG|WRONG|ERROR|Falsifying|passed|failed" "$OUT/reliability-$what.log" | tail -8
        fi
        rm -f "$OUT/reliability-$what.rc"
      done
      ;;
    dtensor)
      # DTensor over NCCL, one rank a GPU (tests/test_dtensor.py skips what needs more GPUs
      # than there are), then the sharded sums next to one GPU's half.
      note "dtensor"
      gpus=$(nvidia-smi -L | wc -l)
      python3 -m pytest -q -rs -p no:cacheprovider tests/test_dtensor.py >"$OUT/dtensor-test.log" 2>&1 || status=1
      tail -4 "$OUT/dtensor-test.log"
      if [ "$gpus" -ge 2 ]; then
        torchrun --nproc-per-node "$gpus" benchmarks/dtensor_sum.py 2>"$OUT/dtensor-bench.err" |
          tee "$OUT/dtensor.md" || { status=1; tail "$OUT/dtensor-bench.err"; }
      else
        echo "dtensor benchmark: needs 2 GPUs, $gpus visible"
      fi
      ;;
    cpu)
      note "CPU comparison"
      python3 -m warpreduce_torch.bench --cpu --out "$OUT" 2>/dev/null | tee "$OUT/cpu.txt" || status=1
      ;;
    cpu-random)
      # The CPU kernel on random shapes of 2-32 MiB, on this machine's host (all its cores).
      note "CPU, random shapes, seed ${SEED:-1}"
      python3 -m warpreduce_torch.bench --random "${CPU_RANDOM_N:-100}" --cpu --seed "${SEED:-1}" \
        --max-seconds "${RANDOM_SECONDS:-480}" --out "$OUT/cpu-random-${SEED:-1}" 2>/dev/null \
        >"$OUT/cpu-random-${SEED:-1}.txt" || status=1
      sed -n '/^| over/,$p' "$OUT/cpu-random-${SEED:-1}.txt" | head -40
      ;;
    stages)
      note stages
      python3 -m warpreduce_torch.bench.stages | tee "$OUT/stages.md" || status=1
      ;;
    models)
      # transformers and timm models with torch.sum routed to the op (benchmarks/models.py).
      note "models, override off and on"
      python3 benchmarks/models.py --out "$OUT" 2>"$OUT/models.err" | tee "$OUT/models.md" ||
        { status=1; tail -20 "$OUT/models.err"; }
      ;;
    host)
      note "host overhead"
      python3 benchmarks/host_overhead.py | tee "$OUT/host.txt" || status=1
      ;;
    accuracy)
      note "float accuracy"
      python3 benchmarks/accuracy.py | tee "$OUT/accuracy.md" || status=1
      ;;
    ncu)
      note "ncu, staged kernels"
      metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
      metrics+=,smsp__inst_executed.sum,smsp__thread_inst_executed_per_inst_executed.ratio
      metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active
      metrics+=,smsp__average_warp_latency_issue_stalled_barrier.ratio,launch__registers_per_thread
      # The staged kernels' functions carry their registry names; auto's full sum is rows_split.
      names=$(python3 -c 'import warpreduce_torch as wr; print("|".join(wr.kernels("cuda", "stage") + ["rows_split"]))')
      ncu --clock-control none --csv --metrics "$metrics" --kernel-name "regex:$names" \
        python3 benchmarks/ncu_stages.py >"$OUT/ncu.csv" 2>"$OUT/ncu.err" || { status=1; tail "$OUT/ncu.err"; }
      grep -c '"' "$OUT/ncu.csv"
      ;;
    ncu-dims)
      note "ncu, dim kernels"
      metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
      metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
      metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__grid_size
      metrics+=,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__waves_per_multiprocessor
      metrics+=,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio
      metrics+=,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_mio_throttle.ratio
      metrics+=,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active
      metrics+=,launch__occupancy_limit_blocks,sm__maximum_warps_per_active_cycle_pct
      metrics+=,launch__registers_per_thread,smsp__average_warp_latency_issue_stalled_math_pipe_throttle.ratio
      metrics+=,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warp_latency_issue_stalled_not_selected.ratio
      metrics+=,smsp__inst_executed_pipe_fp64.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_lsu.sum
      metrics+=,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active
      ncu --clock-control none --csv --metrics "$metrics" --kernel-name regex:'rows_|columns|tiled' \
        python3 benchmarks/ncu_dims.py ${NCU_DIMS_ARGS:-} >"$OUT/ncu-dims.csv" 2>"$OUT/ncu-dims.err" || { status=1; tail "$OUT/ncu-dims.err"; }
      python3 - "$OUT/ncu-dims.csv" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, body = rows[0], rows[1:]
k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
for r in body:
    print(r[k].split("(")[0][-40:], r[m], r[v])
PY
      ;;
    random)
      # Random shapes (warpreduce_torch/bench/random_shapes.py): SEED, RANDOM_N shapes,
      # within RANDOM_SECONDS of measuring; NO_COMPILE=1 leaves torch.compile out.
      note "random shapes, seed ${SEED:-1}"
      python3 -m warpreduce_torch.bench --random "${RANDOM_N:-200}" --seed "${SEED:-1}" \
        --max-seconds "${RANDOM_SECONDS:-480}" ${NO_COMPILE:+--no-compile} \
        --out "$OUT/random-${SEED:-1}" 2>/dev/null >"$OUT/random-${SEED:-1}.txt" || status=1
      sed -n '/^| over/,$p' "$OUT/random-${SEED:-1}.txt" | head -60
      ;;
    small)
      note "small extents"
      python3 -m warpreduce_torch.bench --small-extents --max-seconds "${SMALL_SECONDS:-300}" \
        --out "$OUT/small" 2>/dev/null >"$OUT/small.txt" || status=1
      tail -30 "$OUT/small.txt"
      ;;
    exact)
      # kernel="exact" next to auto, torch.sum, CUB and torch.compile: full sums of the float
      # dtypes at 2^24-2^28, then the bits: GPU = CPU, every layout and batch alike, and
      # this GPU's digest against the one recorded in benchmarks/ (another GPU model's).
      note "exact sums"
      python3 -m warpreduce_torch.bench --sizes "${EXACT_SIZES:-24-28}" \
        --dtypes float32 bfloat16 float16 float64 --kernels auto exact cub torch.compile \
        --out "$OUT/exact" 2>/dev/null >"$OUT/exact.txt" || status=1
      sed -n '/GB\/s/,$p' "$OUT/exact.txt" | tail -40
      python3 benchmarks/exact_bits.py --write "$OUT/exact_bits.json" \
        --compare "${BITS_COMPARE:-benchmarks/exact_bits_cpu.json}" | tee "$OUT/exact_bits.txt" || status=1
      ;;
    invariance)
      note "invariance"
      python3 benchmarks/invariance.py | tee "$OUT/invariance.md" || status=1
      ;;
    resources)
      # Registers, shared memory and spills of every kernel (cuobjdump): local memory
      # (LOCAL > 0) in a hot kernel is a finding.
      note "kernel resources"
      cuobjdump -res-usage warpreduce_torch/_C*.so >"$OUT/resources.txt" 2>&1 || status=1
      grep -B1 "LOCAL:[1-9]" "$OUT/resources.txt" | grep -o "Function [^:]*" | c++filt | cut -c1-160 | head -20
      ;;
    sweep)
      note sweep
      python3 -m warpreduce_torch.bench --out "$OUT" 2>/dev/null | tee "$OUT/sweep.txt" || status=1
      ;;
    dims)
      note "dim reductions"
      python3 -m warpreduce_torch.bench --dims --dims-filter "${DIMS_FILTER:-}" ${NO_COMPILE:+--no-compile} \
        --out "$OUT" 2>/dev/null |
        tee "$OUT/dims.txt" || status=1
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  pack  # after every step: a call stopped by its time limit still returns what ran
done
note "done, status $status"
exit $status
