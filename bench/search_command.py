#!/usr/bin/env python3
"""`loom optimize` end to end, as a user runs it, on Unity's evaluation models and device counts.

For each model and GPU count (Summit nodes of 6 V100s; each model's default batch per GPU times
the GPUs, as in Unity's evaluation) it runs the whole command in a process of its own, with the
default rule libraries unless --rules is given, and prints the wall clock, peak memory, each
stage's share (stages marked "alongside" ran beside the one before them on the command's
default --jobs, the number of cores; `-- -j1` runs them one after another), the
substitutions the plan applies and the plan's simulated iteration time.

  bench/search_command.py [--loom build/cli/loom] [--models dlrm,resnext50] [--gpus 6,48]
                          [--rules LIB.json ...] [--timeout 900] [-- extra optimize options]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

UNITY_MODELS = ["dlrm", "candle_uno", "mlp", "xdl", "inception_v3", "resnext50", "bert_large"]
UNITY_SECONDS = {("resnext50", 6): 57, ("resnext50", 12): 107, ("resnext50", 24): 180, ("resnext50", 48): 355,
                 ("inception_v3", 192): 1200}


def default_batch(loom, model):
    shown = json.loads(subprocess.run([loom, "show", "--model", model, "--json"], check=True, capture_output=True, text=True).stdout)
    return shown["params"]["batch"]


def run(loom, model, gpus, rules, extra, timeout):
    batch = default_batch(loom, model) * gpus
    command = [loom, "optimize", "--model", model, "--machine", "summit", "--nodes", str(gpus // 6), "--batch", str(batch),
               "--json", "-q"] + (["--rules"] + rules if rules else []) + extra
    began = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return {"error": f"did not finish in {timeout} s"}
    wall = time.monotonic() - began
    peak_mib = os_peak_mib()
    if child.returncode != 0:
        return {"error": (err.strip().splitlines() or ["exit %d" % child.returncode])[-1], "wall": wall}
    report = json.loads(out)
    return {"wall": wall, "peak_mib": peak_mib, "report": report}


def os_peak_mib():
    # The largest resident size any child of this process reached: run_isolated forks a process
    # per run, so that is this run's `loom optimize` (its `loom show` is far smaller).
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loom", default="build/cli/loom")
    parser.add_argument("--models", default=",".join(UNITY_MODELS))
    parser.add_argument("--gpus", default="6,12,24,48,96,192")
    parser.add_argument("--rules", nargs="*", default=[])
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--ablation", action="store_true",
                        help="Unity's ablation instead: (a) mapping only (no rules), (b) sequential (TASO, then FlexFlow), "
                             "(c) joint, (d) joint with pipelines, and the substitutions of (c); (a) and (c) are refined "
                             "by the MCMC, as (b)'s second stage is FlexFlow's MCMC")
    parser.add_argument("extra", nargs="*", help="options passed on to loom optimize (after --)")
    args = parser.parse_args()
    if args.ablation:
        return ablation(args)
    print(f"{'model':<13} {'GPUs':>4} {'wall (s)':>9} {'peak MiB':>9} {'plan (ms)':>10} {'chosen':<14} {'subst':>5}  "
          "stages (share of the wall clock)  [Unity]")
    for model in args.models.split(","):
        for gpus in (int(g) for g in args.gpus.split(",")):
            r = run_isolated(args.loom, model, gpus, args.rules, args.extra, args.timeout)
            unity = UNITY_SECONDS.get((model, gpus))
            tail = f"  [Unity {unity // 60} m {unity % 60} s]" if unity else ""
            if "error" in r:
                print(f"{model:<13} {gpus:>4} {r.get('wall', float('nan')):>9.1f}  {r['error']}{tail}", flush=True)
                continue
            rep = r["report"]
            # A stage run alongside the one before it (loom optimize --jobs) shares the wall clock with it.
            stages = ", ".join(f"{s['stage']} {100 * s['seconds'] / r['wall']:.0f}%{' alongside' if s.get('alongside_previous') else ''}"
                               for s in rep["stages"] if s["seconds"] >= 0.005 * r["wall"])
            load = r["wall"] - rep["total_seconds"]
            print(f"{model:<13} {gpus:>4} {r['wall']:>9.1f} {r['peak_mib']:>9.0f} {1e3 * rep['best_seconds']:>10.2f} {rep['chosen']:<14} "
                  f"{len(rep['substitutions']):>5}  loading {100 * load / r['wall']:.0f}%, {stages}{tail}", flush=True)


def ablation(args):
    empty = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"loom_no_rules_{os.getpid()}.json")
    with open(empty, "w") as f:
        json.dump({"format": "loom-rules", "version": 1, "specs": [], "rules": []}, f)
    print(f"{'model':<13} {'GPUs':>4} {'(a) mapping':>12} {'(b) sequential':>15} {'(c) joint':>10} {'(d) +pipelines':>15} "
          f"{'(c) vs (b)':>11}  substitutions of (c)   (simulated ms per iteration)")
    try:
        for model in args.models.split(","):
            for gpus in (int(g) for g in args.gpus.split(",")):
                bare = run_isolated(args.loom, model, gpus, [empty], args.extra, args.timeout)
                full = run_isolated(args.loom, model, gpus, args.rules, args.extra, args.timeout)
                if "error" in bare or "error" in full:
                    print(f"{model:<13} {gpus:>4}  {bare.get('error') or full.get('error')}", flush=True)
                    continue
                # Each search as the command runs it: the joint plan refined by the MCMC, as the
                # sequential baseline's second stage is FlexFlow's MCMC.
                a, rep = bare["report"]["refined_seconds"], full["report"]
                b, c = rep["baselines"]["sequential"], rep["refined_seconds"]
                d = min(c, rep["pipeline_seconds"] or float("inf"))
                counts = {}
                for s in rep["joint_substitutions"]:
                    name = s["rule"] + (" (right to left)" if s["reversed"] else "")
                    counts[name] = counts.get(name, 0) + 1
                used = ", ".join(f"{n} x{k}" for n, k in sorted(counts.items(), key=lambda e: -e[1])) or "none"
                gain = b / c if b and c else float("nan")
                print(f"{model:<13} {gpus:>4} {1e3 * a:>12.2f} {1e3 * b:>15.2f} {1e3 * c:>10.2f} {1e3 * d:>15.2f} {gain:>10.3f}x  {used}",
                      flush=True)
    finally:
        os.remove(empty)


def run_isolated(loom, model, gpus, rules, extra, timeout):
    # Each run in a forked process of its own, so that its peak memory is its own.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        result = run(loom, model, gpus, rules, extra, timeout)
        with os.fdopen(write, "w") as f:
            json.dump(result, f)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return json.loads(text)


if __name__ == "__main__":
    sys.exit(main())
