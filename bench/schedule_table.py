#!/usr/bin/env python3
"""SuperScaler's plans beside data parallelism and Loom's search, on 8 and 32 Summit GPUs.

For each schedule of specs/schedules/seed_plans_summit.loom (NAME_8gpus, NAME_32gpus: 4 GPUs a
node), at the model and sizes its header gives, it prints the simulated iteration time and the
peak memory of the fullest device of:
  - data parallelism (every operator split by its batch over every GPU, written as a schedule);
  - `loom optimize` with --no-recompute --no-coshard (the search without the new options);
  - the seed's schedule (`loom schedule check`);
  - `loom optimize` as it runs by default (recomputation, then co-shard, when no plan fits),
and the wall clock of each `loom optimize` command. Every plan is measured by `loom simulate`.

  bench/schedule_table.py [--loom build/cli/loom] [--only swin,gpt3] [--gpus 8,32] [--timeout 900]
                          [-- extra optimize options]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEDULES = os.path.join(HERE, "..", "specs", "schedules", "seed_plans_summit.loom")
GPUS_PER_NODE = 4
SEED = "seed's schedule"


def data_parallel_statements(model, gpus):
    last = gpus - 1
    if model == "swin":  # as in the seed's schedule: windows cut by features, the position bias on device 0
        return [f'split "blocks*", "ewadd#*", "gelu#*", "dropout#*", "add_*#*", "cyclic_shift#*" by batch/{gpus} to 0..{last};',
                f'split "window_*#*" by f/{gpus} to 0..{last};', 'assign "gather_rows#*" to 0;']
    return [f'split "*" by batch/{gpus} to 0..{last};']


def seed_schedules(path):
    text = open(path).read()
    found = []
    for m in re.finditer(r"schedule\s+(\w+)\s+for\s+(\w+)<([^>]*)>", text):
        name, model, sizes = m.group(1), m.group(2), m.group(3)
        gpus = int(re.search(r"_(\d+)gpus$", name).group(1))
        params = [p.strip().replace(" ", "") for p in sizes.split(",") if p.strip()]
        found.append({"name": name, "model": model, "params": params, "sizes": sizes, "gpus": gpus})
    return found


def run(command, timeout):
    began = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "", f"did not finish in {timeout} s", timeout
    wall = time.monotonic() - began
    if done.returncode != 0:
        lines = [l for l in done.stderr.strip().splitlines() if not l.startswith("note:")]
        return done.stdout, (lines or ["exit %d" % done.returncode])[-1], wall
    return done.stdout, None, wall


def simulated(loom, plan, timeout):
    out, error, _ = run([loom, "simulate", "--plan", plan, "--json"], timeout)
    try:  # a plan that does not fit is simulated all the same, and the command exits 1
        report = json.loads(out)
    except (TypeError, ValueError):
        return {"error": error}
    peak = max(d["memory_bytes"] for d in report["per_device"])
    return {"ms": report["iteration_seconds"] * 1e3, "gib": peak / 2**30, "fits": report["fits_memory"]}


def machine_args(gpus):
    return ["--nodes", str(gpus // GPUS_PER_NODE), "--gpus-per-node", str(GPUS_PER_NODE)]


def from_schedule(loom, file, name, gpus, plan, timeout):
    _, error, _ = run([loom, "schedule", "check", file, "--name", name, "-o", plan] + machine_args(gpus), timeout)
    return {"error": error} if error else simulated(loom, plan, timeout)


def optimized(loom, seed, plan, options, extra, timeout):
    params = [a for p in seed["params"] for a in ("-p", p)]
    command = [loom, "optimize", "--model", seed["model"], *params, *machine_args(seed["gpus"]), "-q", "-o", plan, *options, *extra]
    _, error, wall = run(command, timeout)
    result = {"error": error} if error else simulated(loom, plan, timeout)
    result["wall"] = wall
    return result


def cell(r):
    if "error" in r:
        needs = re.search(r"needs ([0-9.]+ [KMGT]iB)", r["error"])
        return f"no plan fits (needs {needs.group(1)})" if needs else "error: " + r["error"][:80]
    text = f"{r['ms']:.1f} ms, {r['gib']:.1f} GiB"
    return text if r["fits"] else text + " (does not fit)"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loom", default="build/cli/loom")
    parser.add_argument("--schedules", default=SCHEDULES)
    parser.add_argument("--only", default="", help="models, comma-separated (default: all)")
    parser.add_argument("--gpus", default="8,32")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("extra", nargs="*", help="extra `loom optimize` options, after --")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    gpu_counts = {int(g) for g in args.gpus.split(",")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seed_schedules(args.schedules):
            if (only and seed["model"] not in only) or seed["gpus"] not in gpu_counts:
                continue
            print(f"{seed['name']}: {seed['model']}<{seed['sizes']}> on {seed['gpus']} GPUs", file=sys.stderr, flush=True)
            dp_file = os.path.join(tmp, "dp.loom")
            with open(dp_file, "w") as f:
                body = "\n  ".join(data_parallel_statements(seed["model"], seed["gpus"]))
                f.write(f"schedule dp for {seed['model']}<{seed['sizes']}> {{\n  {body}\n}}\n")
            plan = os.path.join(tmp, "plan.json")
            row = {"seed": seed,
                   "data parallel": from_schedule(args.loom, dp_file, "dp", seed["gpus"], plan, args.timeout),
                   "search": optimized(args.loom, seed, plan, ["--no-recompute", "--no-coshard"], args.extra, args.timeout),
                   SEED: from_schedule(args.loom, args.schedules, seed["name"], seed["gpus"], plan, args.timeout),
                   "search with the new options": optimized(args.loom, seed, plan, [], args.extra, args.timeout)}
            for key in ("data parallel", "search", SEED, "search with the new options"):
                print(f"  {key}: {cell(row[key])}", file=sys.stderr, flush=True)
            rows.append(row)
    print("| model | GPUs | data parallel | search | seed's schedule | search with recompute and co-shard | search wall clock |")
    print("| --- | ---: | --- | --- | --- | --- | ---: |")
    for r in rows:
        walls = ", ".join(f"{r[k]['wall']:.1f} s" for k in ("search", "search with the new options"))
        print(f"| {r['seed']['model']} | {r['seed']['gpus']} | {cell(r['data parallel'])} | {cell(r['search'])} | "
              f"{cell(r[SEED])} | {cell(r['search with the new options'])} | {walls} |")


if __name__ == "__main__":
    main()
