"""Command line: ``python -m interpretable demo`` and ``python -m interpretable reproduce NAME``."""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

from . import reproduce


def write_views(out: Path) -> list[Path]:
    """Fit small models on the shipped data and write every explanation view (HTML pages
    and PNG figures) to ``out``; returns the paths written (one to three minutes on 2 CPU
    cores)."""
    import numpy as np
    import pandas as pd

    from .datasets import load_mnist_5k, load_rotten_tomatoes, load_shakespeare
    from .estimators.baselines import EmbeddingBagClassifier
    from .estimators.diversity_lstm import DiversityLSTMClassifier
    from .estimators.language_model import ISANLanguageModel
    from .estimators.vision import BcosViTClassifier
    from .explanation import global_explanation
    from .pipeline import make_explainable_pipeline

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


def _demo(args) -> int:
    names = ["foundation"] + [n for n in reproduce.available() if n != "foundation"]
    names = [n for n in names + ["views"] if not args.only or n in args.only]
    for name in names:
        module = None if name == "views" else reproduce.load(name)
        if module is not None and not hasattr(module, "demo"):
            continue
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        if module is None:
            for path in write_views(Path(args.out)):
                print(path)
        else:
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
    demo.add_argument("--only", nargs="*", help="run only these sections (e.g. views)")
    demo.add_argument("--out", default="interpretable-demo",
                      help="folder for the explanation views (HTML pages, PNG figures)")
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
