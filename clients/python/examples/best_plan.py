#!/usr/bin/env python3
"""Asks a running stepcostd for the best plan of a training job and prints it.

    PYTHONPATH=clients/python/src /usr/bin/python3 clients/python/examples/best_plan.py \
        --server localhost:8081 --model llama3-8b --cluster dgx-h100 --gpus 32

prints the layout, the step time and its breakdown, memory per GPU and the nodes
and GPUs the plan uses; --json prints the plan as the API's JSON instead. Exits 1
when the call fails (the gRPC code and the offending fields on standard error) or
no plan fits, 2 on bad flags. STEPCOST_TOKEN is sent as a bearer token if set.
"""

import argparse
import os
import sys

from google.protobuf import json_format

import stepcost
from stepcost import pb


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default="localhost:8081", help="stepcostd's gRPC address")
    p.add_argument("--model", default="llama3-8b", help="catalog model")
    p.add_argument("--cluster", default="dgx-h100", help="catalog system")
    p.add_argument("--gpus", type=int, default=32, help="job size")
    p.add_argument("--gbs", type=int, default=256, help="global batch, sequences")
    p.add_argument("--seq", type=int, default=8192, help="sequence length")
    p.add_argument("--timeout", type=float, default=30.0, help="deadline, seconds")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    return p.parse_args(argv)


def enum_name(enum, value, prefix):
    """RECOMPUTE_SELECTIVE -> selective: the CLI's spelling."""
    return enum.Name(value)[len(prefix):].lower()


def gpu_ranges(gpus):
    """[0, 1, 2, 3, 6] -> "0-3,6"."""
    out, start = [], None
    for i, g in enumerate(gpus):
        if start is None:
            start = g
        if i + 1 == len(gpus) or gpus[i + 1] != g + 1:
            out.append(str(start) if start == g else f"{start}-{g}")
            start = None
    return ",".join(out)


def layout_line(l):
    return (f"tp={l.tp} pp={l.pp} dp={l.dp} cp={l.cp} ep={l.ep} zero={l.zero} "
            f"micro_batch={l.micro_batch} "
            f"recompute={enum_name(pb.Recompute, l.recompute, 'RECOMPUTE_')} "
            f"sp={'on' if l.sp else 'off'} "
            f"schedule={enum_name(pb.Schedule, l.schedule, 'SCHEDULE_')}"
            + (f" virtual_stages={l.virtual_stages}" if l.virtual_stages > 1 else ""))


def describe(args, resp):
    plan = resp.plans[0]
    est = plan.estimate
    b, m, t = est.breakdown, est.memory, est.throughput
    exposed = b.exposed_comm_s
    comm = sum((exposed.tp, exposed.cp, exposed.ep, exposed.pp, exposed.dp, exposed.zero3, exposed.embedding))
    lines = [
        f"best plan for {args.model} on {plan.gpus} GPUs of {args.cluster}"
        f" (estimator {resp.estimator_version}{', cached' if resp.cached else ''})",
        f"  layout     {layout_line(plan.layout)}",
        f"  step time  {est.step_time_s:.3f} s: forward {b.forward_s:.3f}, backward {b.backward_s:.3f},"
        f" recompute {b.recompute_s:.3f}, exposed communication {comm:.3f}, bubble {b.bubble_s:.3f},"
        f" optimizer {b.optimizer_s:.3f}, contention {b.contention_s:.3f}",
        f"  throughput {t.tokens_per_s:,.0f} tokens/s ({t.tokens_per_s_per_gpu:,.0f} per GPU), MFU {100 * t.mfu:.1f} %",
        f"  memory     {m.total_gb:.1f} of {m.capacity_gb:.1f} GB per GPU"
        f" ({'fits' if m.fits else 'does not fit'}, {m.headroom_gb:.1f} GB headroom)",
        f"  nodes      {len(plan.placement.nodes)}: "
        + " ".join(f"{n.node}[{gpu_ranges(list(n.gpus))}]" for n in plan.placement.nodes),
    ]
    return "\n".join(lines)


def api_json(message):
    """The API's JSON as the REST gateway and the CLI write it: proto field names
    (micro_batch, not microBatch) and zero values included (node 0 is a node)."""
    try:  # protobuf >= 5.26
        return json_format.MessageToJson(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)
    except TypeError:  # older protobuf (Debian's 3.21) names the option differently
        return json_format.MessageToJson(message, preserving_proto_field_name=True,
                                         including_default_value_fields=True)


def main(argv=None):
    args = parse_args(argv)
    request = {
        "model": {"name": args.model},
        "cluster": {"name": args.cluster},
        "training": {"seq_len": args.seq, "global_batch": args.gbs},
        "gpus": args.gpus,
        "top_k": 1,
    }
    try:
        with stepcost.Client(args.server, timeout=args.timeout,
                             token=os.environ.get("STEPCOST_TOKEN")) as client:
            resp = client.estimate_plan(request)
    except stepcost.StepcostError as e:
        print(f"best_plan: {e}", file=sys.stderr)
        # The message names the field too; the violations are for programs.
        for field, _ in e.violations:
            print(f"  field: {field}", file=sys.stderr)
        return 1
    if not resp.plans:
        print(f"best_plan: no plan of {args.model} fits on {args.gpus} GPUs of {args.cluster}", file=sys.stderr)
        return 1
    if args.json:
        print(api_json(resp.plans[0]))
    else:
        print(describe(args, resp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
