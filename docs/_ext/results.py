"""Tables rendered from ``benchmarks/results/*.json`` at build time, so the documentation shows
what the last run wrote rather than a hand copy of it.

In a MyST page::

    ```{results-table} bcos-vit
    ```

renders ``TABLES["bcos-vit"]()``: a Markdown table (header row, then rows) followed by the
result file it was read from. ``{explain-methods}`` lists the registered explanation methods.
A missing file or key fails the build (a warning, an error under ``-W``).
"""

from __future__ import annotations

import functools
import importlib
import json
from functools import cache
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


@cache
def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def f3(x: float) -> str:
    """.776 (three decimals, no leading zero below 1)."""
    text = f"{x:.3f}"
    return text[1:] if text.startswith("0.") else text.replace("-0.", "-.")


def f2(x: float) -> str:
    """.30 (two decimals, halves rounded up as written: the JSON holds float32 values such as
    0.29499998688697815 for .295)."""
    from decimal import ROUND_HALF_UP, Decimal

    text = str(Decimal(f"{x:.6g}").quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("0.") else text


def pm(score: dict) -> str:
    """mean ± standard error of a ``{"mean", "se"}`` record."""
    return f"{f3(score['mean'])} ± {f3(score['se'])}"


def ratio(x: float) -> str:
    if x >= 1000:
        return f"{x:.2e}".replace("e+0", "e").replace("e+", "e") + "×"
    return f"{x:.2f}×" if x < 10 else f"{x:.3g}×"


def met(flag: bool, text: str = "") -> str:
    return f"{text} met".strip() if flag else f"{text} missed".strip()


# ---------------------------------------------------------------------------------------------
# one function per table: (source files, header, rows)

def bcos_vit():
    r = load("bcos_vit.json")
    acc, checks = r["accuracy"], r["checks"]
    loc, pert = r["localisation"], r["perturbation"]
    best = checks["localisation_at_least_1.5x_best_post_hoc"]
    post_hoc = [m for m in loc if m not in ("inherent", "rollout", "final_attention")]
    others = sorted((m for m in post_hoc if m != best["best_post_hoc"]),
                    key=lambda m: -loc[m]["mean"])
    names = {"integrated_gradients": "IG", "input_x_gradient": "I×G", "gradcam": "GradCAM",
             "gradsam": "GradSAM"}
    abc_e, abc_i = (checks["best_area_between_curves_encoding_baseline"],
                    checks["best_area_between_curves_image_baseline"])
    rows = [
        ["accuracy", f"{f3(acc['bcos_vit_multiplicative'])} (additive "
         f"{f3(acc['bcos_vit_additive'])}, none {f3(acc['bcos_vit_none'])}; ViT "
         f"{f3(acc['vit'])})", "—",
         f"≥ .95 {met(checks['accuracy_at_least_0.95']['met'])}"],
        [f"localisation, {best['n_grids']} grids", pm(loc["inherent"]),
         f"{names[best['best_post_hoc']]} {pm(best['best_post_hoc_score'])} ("
         + ", ".join(f"{names[m]} {f3(loc[m]['mean'])}" for m in others[:2]) + ")",
         f"≥ 1.5×: {met(best['met'])} ({best['ratio']:.2f}×)"],
        ["area between curves, input zeroed / black pixels",
         f"{f3(pert['inherent']['abc_encoding'])} / {f3(pert['inherent']['abc_image'])}",
         f"{names[abc_e['best_post_hoc']]} {f3(abc_e['best_post_hoc_abc'])} / "
         f"{names[abc_i['best_post_hoc']]} {f3(abc_i['best_post_hoc_abc'])}",
         f"best: {met(abc_e['met'] and abc_i['met'])}"],
    ]
    return ["bcos_vit.json"], ["", "inherent", "best post-hoc", "target"], rows


def bcos_localisation():
    r = load("bcos_localisation_8_epochs.json")["settings"]
    methods = [("inherent", "inherent"), ("integrated_gradients", "integrated gradients"),
               ("gradcam", "GradCAM"), ("gradsam", "GradSAM"),
               ("input_x_gradient", "Input×Gradient")]
    rows = []
    for setting, label in (("mnist_black", "black"), ("textured", "textures")):
        for design in ("holistic", "v2"):
            result = r[setting][design]
            loc = result["localisation"]
            top = max((m for m, _ in methods), key=lambda m: loc[m]["mean"])
            cells = []
            for i, (m, _) in enumerate(methods):
                cell = pm(loc[m]) if i < 2 else f3(loc[m]["mean"])
                cells.append(f"**{cell}**" if m == top else cell)
            rows.append([f"{label}, {design}", *cells, f3(result["accuracy"])])
    header = ["", *(name for _, name in methods), "accuracy"]
    return ["bcos_localisation_8_epochs.json"], header, rows


def bcos_finetune():
    r = load("bcos_finetune.json")["modes"]
    columns = [("head", '`finetune="head"`'), ("last_2_blocks", "`finetune=2`"),
               ("all", '`finetune="all"`'), ("scratch", "from scratch")]

    def accuracy(key):
        a = r[key]["accuracy"]
        return f3(a["mean"]) + (f" ± {f3(a['sd'])}" if a["sd"] > 0.007 else "")

    rows = [[f"{n:,}", *(accuracy(f"{c}_n{n}") for c, _ in columns)] for n in (250, 1000)]
    speeds = []
    for c, _ in columns:
        means = sorted(r[f"{c}_n{n}"]["train_images_per_s"]["mean"] for n in (250, 1000))
        speeds.append(f"{means[0]:,.0f}–{means[1]:,.0f}")
    rows.append(["training images/s (N = 250 / 1,000 means)", *speeds])
    return ["bcos_finetune.json"], ["N labelled", *(name for _, name in columns)], rows


def seat():
    r = load("seat.json")["encoders"]
    cols = [(enc, m) for enc in ("rnn", "bilstm") for m in ("seat", "seat-authors")]
    labels = {"rnn": "RNN", "bilstm": "BiLSTM", "seat": "paper", "seat-authors": "authors"}
    header = ["", *(f"{labels[e]} {labels[m]}" for e, m in cols), "target"]

    def check(e, m, key):
        return r[e]["checks"][m][key]["ratio_vanilla_over_seat"]

    def method(e, m):
        return r[e]["methods"][m]

    rows = [
        ["attention JSD, r = 1e-3 / 1e-2",
         *(f"{ratio(check(e, m, 'jsd_10x_below_vanilla_pgd_r1e-3'))} / "
           f"{ratio(check(e, m, 'jsd_10x_below_vanilla_pgd_r1e-2'))}" for e, m in cols),
         "≥ 10×"],
        ["prediction TVD, r = 1e-3 / 1e-2",
         *(f"{ratio(check(e, m, 'tvd_10x_below_vanilla_pgd_r1e-3'))} / "
           f"{ratio(check(e, m, 'tvd_10x_below_vanilla_pgd_r1e-2'))}" for e, m in cols),
         "≥ 10× (" + met(any(r[e]["checks"][m]["tvd_10x_below_vanilla_pgd_r1e-3"]["met"]
                             for e, m in cols)) + ")"],
        [f"F1 (vanilla {f3(method('rnn', 'vanilla')['f1'])} / "
         f"{f3(method('bilstm', 'vanilla')['f1'])})",
         *(f3(method(e, m)["f1"]) for e, m in cols), "within 2 points"],
        ["comprehensiveness / sufficiency (vanilla "
         f"{f3(method('rnn', 'vanilla')['comprehensiveness'])} / "
         f"{f3(method('rnn', 'vanilla')['sufficiency'])} and "
         f"{f3(method('bilstm', 'vanilla')['comprehensiveness'])} / "
         f"{f3(method('bilstm', 'vanilla')['sufficiency'])})",
         *(f"{f3(method(e, m)['comprehensiveness'])} / {f3(method(e, m)['sufficiency'])}"
           for e, m in cols), "≥ / ≤ vanilla"],
        ["top-4 overlap with vanilla",
         *(f2(method(e, m)["top4_overlap_vanilla"]) for e, m in cols),
         "reported"],
    ]
    return ["seat.json"], header, rows


def seat_minilm():
    r = load("seat_minilm_vanilla_seat_seat_authors.json")["encoders"]["minilm"]
    methods = r["methods"]
    header = ["", "vanilla", "objective (6)", "authors' objective"]
    names = ("vanilla", "seat", "seat-authors")

    def vs(m, key):
        if m == "vanilla":
            return "—"
        return ratio(r["checks"][m][key]["ratio_vanilla_over_seat"])

    rows = [
        ["F1", *(f3(methods[m]["f1"]) for m in names)],
        ["comprehensiveness / sufficiency",
         *(f"{f3(methods[m]['comprehensiveness'])} / {f3(methods[m]['sufficiency'])}"
           for m in names)],
        ["attention JSD, vanilla / method, r = 1e-3 / 1e-2",
         *(f"{vs(m, 'jsd_10x_below_vanilla_pgd_r1e-3')} / {vs(m, 'jsd_10x_below_vanilla_pgd_r1e-2')}"
           if m != "vanilla" else "—" for m in names)],
        ["prediction TVD, vanilla / method, r = 1e-3 / 1e-2",
         *(f"{vs(m, 'tvd_10x_below_vanilla_pgd_r1e-3')} / {vs(m, 'tvd_10x_below_vanilla_pgd_r1e-2')}"
           if m != "vanilla" else "—" for m in names)],
    ]
    return ["seat_minilm_vanilla_seat_seat_authors.json"], header, rows


def diversity_lstm():
    r = load("diversity_lstm.json")
    cells = ("vanilla", "diversity", "orthogonal")
    rows = []
    for dataset, label in (("rotten_tomatoes", "Rotten Tomatoes"), ("babi1", "bAbI task 1")):
        res = r[dataset]["results"]
        rows += [
            [f"{label}: accuracy", *(f3(res[c]["accuracy"]) for c in cells)],
            [f"{label}: conicity (mean \\|cos\\|)", *(f3(res[c]["conicity"]) for c in cells)],
            [f"{label}: permutation TVD / decision-flip fraction",
             *(f"{f3(res[c]['permutation_median_tvd'])} / {f3(res[c]['flip_fraction_attention'])}"
               for c in cells)],
            [f"{label}: Pearson with IG", *(f3(res[c]["pearson_ig"]) for c in cells)],
        ]
    return ["diversity_lstm.json"], ["", *cells], rows


def diversity_checks():
    r = load("diversity_lstm.json")
    rows = []
    for dataset, label in (("rotten_tomatoes", "Rotten Tomatoes"), ("babi1", "bAbI task 1")):
        for cell, checks in r[dataset]["checks"].items():
            missed = [k.replace("_", " ") for k, v in checks.items() if v is False]
            rows.append([label, cell, "all met" if not missed else "missed: " + ", ".join(missed)])
    return ["diversity_lstm.json"], ["data", "model", "targets of the paper's pattern"], rows


def isan():
    r = load("isan.json")["language_model"]
    by = {(row["model"], row["budget"]): row for row in r["rows"]}
    rows = []
    for budget in sorted({b for _, b in by}):
        i, lstm = by["ISAN", budget], by["LSTM", budget]
        rows.append([f"{round(i['parameters'], -3) // 1000:.0f}k parameters (ISAN H={i['hidden_size']}, "
                     f"LSTM H={lstm['hidden_size']})",
                     f"{i['test_bits_per_char']:.3f}", f"{lstm['test_bits_per_char']:.3f}",
                     f"{i['test_bits_per_char'] / lstm['test_bits_per_char']:.3f}"])
    return ["isan.json"], ["budget", "ISAN bpc", "LSTM bpc", "ISAN / LSTM"], rows


def isan_checks():
    sources, rows = [], []
    for name in ("isan.json", "isan_600k.json"):
        r = load(name)["language_model"]
        sources.append(name)
        for check, value in r["checks"].items():
            if isinstance(value, dict):
                numbers = ", ".join(f"{k} {v:.3f}" for k, v in value.items() if k != "met")
                rows.append([f"{r['train_chars']:,}", check.replace("_", " "),
                             met(value["met"]), numbers])
    return sources, ["training characters", "target", "", "ISAN / LSTM bpc"], rows


def bcos_text_parity(name: str = "bcos_text_parity_full.json"):
    """Accuracy of every model and seed on one split, the means and the two targets (at most
    1.5 points below the conventional MiniLM, at least 5 above TF-IDF; a ``teacher`` is the
    conventional MiniLM of the same seed, saved by the run)."""
    r = load(name)
    accuracy, means = r["accuracy"], r["mean_accuracy"]
    tfidf = accuracy["tfidf_logreg"]["-"]
    seeds = [str(seed) for seed in r["seeds"]]
    rows = [["TF-IDF + logistic regression", *([""] * len(seeds)), f3(tfidf), ""]]
    for model, per_seed in accuracy.items():
        if model == "tfidf_logreg":
            continue
        params = {k: "the conventional MiniLM of the same seed" if k == "teacher" else v
                  for k, v in r["variants"].get(model, {}).items()}
        label = "conventional MiniLM, lr 5e-5" if model == "minilm" else \
            f"B-cos MiniLM `{json.dumps(params, ensure_ascii=False)}`"
        gap = "" if model == "minilm" else \
            f"{100 * (means[model] - means['minilm']):+.1f} / {100 * (means[model] - tfidf):+.1f}"
        rows.append([label, *(f3(per_seed[s]) if s in per_seed else "" for s in seeds),
                     f3(means[model]), gap])
    header = ["model", *(f"seed {s}" for s in seeds), "mean",
              "points vs conventional / vs TF-IDF (targets ≥ −1.5 / ≥ +5)"]
    return [name], header, rows


def bcos_text_faithfulness(name: str = "bcos_text_faithfulness.json"):
    """ERASER AOPC of the exact B-cos explanation and the post-hoc methods, both levels."""
    r = load(name)
    rows = []
    for name, m in r["methods"].items():
        rows.append([f"`{name}`", f3(m["piece"]["comprehensiveness"]),
                     f3(m["piece"]["sufficiency"]), f3(m["word"]["comprehensiveness"]),
                     f3(m["word"]["sufficiency"]), f2(m["special_share_of_top_10_percent"]),
                     f"{m['seconds']:.0f}"])
    header = ["model / method", "comprehensiveness ↑ (pieces)", "sufficiency ↓ (pieces)",
              "comprehensiveness ↑ (words)", "sufficiency ↓ (words)",
              "[CLS]/[SEP] share of the top 10 %", "seconds"]
    return [name], header, rows


def targets():
    """Every speed target recorded by a benchmark (what ``make bench-summary`` prints)."""
    sources, rows = [], []
    for path in sorted(RESULTS.glob("*.json")):
        result = load(path.name)
        found = result.get("targets") if isinstance(result, dict) else None
        if isinstance(found, list):
            sources.append(path.name)
            load_avg = result.get("load_average_1_5_15_min_at_start", [None])[0]
            for row in found:
                value = row["value"]
                shown = f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
                rows.append([row["name"], shown, row["goal"].replace(">=", "≥").replace("<=", "≤"),
                             "met" if row["met"] else "**missed**",
                             f"`{path.name}`" + ("" if load_avg is None else f" ({load_avg:.1f})")])
    return sources, ["target", "value", "goal", "", "result file (load average)"], rows


def gpu():
    r = load("bcos_gpu.json")
    variants = [("stride1", "ours default"), ("stride2", "`stem_stride=2`"),
                ("stride2_no_prior", "their architecture")]
    rows = []
    for key, model in (("vit_ti16", "ViT-Ti/16"), ("vit_s16", "ViT-S/16")):
        res = r["results"].get(key)
        if res is None:
            continue
        ratios, speed = res["ratios_theirs_over_ours"], res["training_images_per_second"]
        for v, label in variants:
            rows.append([f"{model}, {label}", f"{ratios[f'forward_{v}']:.2f}×",
                         f"{ratios[f'explain_{v}']:.2f}×",
                         f"{speed[f'ours_{v}_train_fp32']:.0f} / {speed['theirs_train_fp32']:.0f}",
                         f"{speed[f'ours_{v}_train_bf16']:.0f} / {speed['theirs_train_bf16']:.0f}"])
    header = ["model", "forward", "batched explain", "training images/s fp32 (ours / theirs)",
              "training images/s bf16 autocast (ours / theirs)"]
    return ["bcos_gpu.json"], header, rows


def bcosify():
    r = load("bcosify_quick.json")
    names = {"original_finetuned": "original, fine-tuned", "bcosified": "B-cosified, fine-tuned",
             "bcos_from_scratch": "B-cos from scratch"}
    methods = [("inherent", "inherent"), ("integrated_gradients", "IG"),
               ("input_x_gradient", "I×G"), ("gradsam", "GradSAM"), ("rollout", "rollout")]
    before = r["vision"]["pretrained"]
    rows = [["ViT: original, before the budget", f3(before["accuracy"]),
             f"{before['train_seconds']:.0f}", *([""] * len(methods))]]
    for part, label in (("vision", "ViT"), ("text", "MiniLM")):
        for name, model in r[part]["models"].items():
            loc = model.get("localisation", {})
            cells = [pm(loc[m]) if m in loc else "" for m, _ in methods]
            if part == "vision" and not model["grids"]:
                cells[0] = "no confident digit"
            rows.append([f"{label}: {names[name]}", f3(model["accuracy"]),
                         f"{model['train_seconds']:.0f}", *cells])
    header = ["model", "accuracy", "training s", *(f"pointing game: {n}" for _, n in methods)]
    return ["bcosify_quick.json"], header, rows


TABLES = {
    "bcos-text-parity": bcos_text_parity,
    "bcos-text-parity-trec": functools.partial(bcos_text_parity,
                                               "bcos_text_parity_trec.json"),
    "bcos-text-faithfulness": bcos_text_faithfulness,
    "bcos-text-faithfulness-teacher": functools.partial(
        bcos_text_faithfulness, "bcos_text_faithfulness_teacher.json"),
    "bcos-text-faithfulness-trec": functools.partial(
        bcos_text_faithfulness, "bcos_text_faithfulness_trec.json"),
    "bcos-vit": bcos_vit,
    "bcos-localisation": bcos_localisation,
    "bcos-finetune": bcos_finetune,
    "seat": seat,
    "seat-minilm": seat_minilm,
    "diversity-lstm": diversity_lstm,
    "diversity-lstm-checks": diversity_checks,
    "isan": isan,
    "isan-checks": isan_checks,
    "targets": targets,
    "gpu": gpu,
    "bcosify": bcosify,
}


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells):
        return "| " + " | ".join(str(c).replace("\n", " ") for c in cells) + " |"

    return [line(header), line(["---"] * len(header)), *map(line, rows)]


class _Markdown(SphinxDirective):
    def render(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container(classes=["results-table"])
        self.state.nested_parse(StringList(lines, source=self.env.docname), self.content_offset,
                                container)
        return [container]


class ResultsTable(_Markdown):
    """``{results-table} NAME``: the table ``TABLES[NAME]`` from benchmarks/results."""

    required_arguments = 1

    def run(self):
        name = self.arguments[0]
        if name not in TABLES:
            raise self.error(f"unknown results table {name!r}; choose one of {sorted(TABLES)}")
        try:
            sources, header, rows = TABLES[name]()
        except (OSError, KeyError, ValueError) as error:
            raise self.error(f"results table {name!r}: cannot read benchmarks/results: "
                             f"{type(error).__name__}: {error}") from None
        for source in sources:
            self.env.note_dependency(str(RESULTS / source))
        files = ", ".join(f"`benchmarks/results/{s}`" for s in sources)
        return self.render([*markdown_table(header, rows), "", f"*From {files}.*"])


class ExplainMethods(_Markdown):
    """``{explain-methods}``: every explanation method of the public estimators, which of them
    offer it and its options (``interpretable.estimators.methods.describe_explainers``)."""

    def run(self):
        import interpretable
        from interpretable.estimators.methods import describe_explainers

        public = [getattr(interpretable, name) for name in interpretable.__all__]
        estimators = [cls for cls in public if hasattr(cls, "explain_methods")]
        return self.render(describe_explainers(estimators).splitlines())


def explain_methods_of(app, what, name, obj, options, lines):
    """``autodoc-process-docstring``: the page of an estimator's ``explain`` lists the methods
    that estimator offers and their options (its class's ``explainers``), as a last section;
    the docstring in the source stays as written."""
    owner, _, method = name.rpartition(".")
    if what != "method" or method != "explain":
        return
    module, _, cls_name = owner.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), cls_name)
    except (ImportError, AttributeError, ValueError):
        return
    if not getattr(cls, "explainers", None):
        return
    from interpretable.estimators.methods import describe_explainers

    lines += ["", f".. rubric:: The methods of {cls_name}", "",
              *describe_explainers([cls]).splitlines(), ""]


def setup(app):
    app.add_directive("results-table", ResultsTable)
    app.add_directive("explain-methods", ExplainMethods)
    app.connect("autodoc-process-docstring", explain_methods_of, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
