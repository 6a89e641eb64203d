"""Command line: ``python -m interpretable demo`` and ``python -m interpretable reproduce NAME``."""

from __future__ import annotations

import argparse
import inspect
import sys
import time

from . import reproduce


def _demo(args) -> int:
    names = ["foundation"] + [n for n in reproduce.available() if n != "foundation"]
    if args.only:
        names = [n for n in names if n in args.only]
    for name in names:
        module = reproduce.load(name)
        if not hasattr(module, "demo"):
            continue
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        module.demo()
        print(f"[{name}: {time.perf_counter() - start:.1f} s]", flush=True)
    return 0


def _reproduce(args, extra) -> int:
    module = reproduce.load(args.name)
    parser = argparse.ArgumentParser(prog=f"python -m interpretable reproduce {args.name}")
    parser.add_argument("--quick", action="store_true", help="small, fast version of the run")
    if hasattr(module, "add_arguments"):
        module.add_arguments(parser)
    options = vars(parser.parse_args(extra))
    accepted = inspect.signature(module.run).parameters
    results = module.run(**{k: v for k, v in options.items() if k in accepted})
    # quick runs go to <name>_quick.json so they never overwrite a full run's results; a
    # module's results_suffix(options) names other variants (e.g. seat_minilm.json)
    suffix = module.results_suffix(options) if hasattr(module, "results_suffix") else ""
    name = args.name + suffix + ("-quick" if options["quick"] else "")
    path = reproduce.write_results(name, results)
    print(f"results written to {path}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m interpretable", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="worked examples on the shipped data")
    demo.add_argument("--only", nargs="*", help="run only these sections")
    rep = sub.add_parser("reproduce", help=f"reproduce a paper: {', '.join(reproduce.available())}")
    rep.add_argument("name")
    args, extra = parser.parse_known_args(argv)
    if args.command == "demo":
        if extra:
            parser.error(f"unrecognised arguments: {' '.join(extra)}")
        return _demo(args)
    return _reproduce(args, extra)


if __name__ == "__main__":
    sys.exit(main())
