"""Post-hoc explanations against Captum's own classes, side by side in one run, one thread.

``OMP_NUM_THREADS=1 python benchmarks/bench_posthoc_captum.py --checkpoint DIR [--texts 40]
[--ig-texts 100] [--images 32] [--rounds 2]``

Text: the first Rotten Tomatoes test texts (the reproductions' split), a fine-tuned
``transformers`` classifier (``--checkpoint``, e.g. written by
``benchmarks/finetune_transformers.py``), the predicted class, the ``[PAD]`` embedding at every
word piece as the baseline (``[CLS]`` / ``[SEP]`` kept). Images: a torchvision ResNet-18 (ten
classes, seeded random weights: the cost and the agreement do not depend on training) on 64-px
textured digits, 8 × 8 patches, a black baseline image.

* occlusion, LIME and Kernel SHAP (200 coalitions): the package's ``explain`` (float32 and
  ``inference_precision="bf16"``) against Captum's ``FeatureAblation`` / ``Occlusion``,
  ``Lime`` and ``KernelShap`` called one text or image at a time (as ferret and Captum's
  tutorials call them) at their fastest ``perturbations_per_eval`` of a grid, chosen on the
  first samples; timed in ``--rounds`` interleaved rounds (process CPU time, medians). Beside
  each time: the largest difference from Captum's attributions on the same coalitions
  (Captum's classes fed the package's draws), and for bf16 the rank correlation (Spearman)
  with the float32 attributions.
* integrated gradients: Captum's ``LayerIntegratedGradients`` over the word embeddings, 50
  Gauss-Legendre steps, one text per call and in padded batches of 32 at its fastest
  ``internal_batch_size``; the package at 50 steps and with ``n_steps="auto"`` at Captum's
  per-text median completeness error as the tolerance; one round (each run is minutes), with
  the completeness errors' median and 95th percentile.

Writes ``benchmarks/results/bench_posthoc_captum.json`` with ``targets`` rows.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from ratios import RESULTS, finish_record, run_record, target, timed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

PERTURBATION = ("occlusion", "lime", "kernel_shap")
N_SAMPLES = 200
PER_EVAL_GRID = {"occlusion": (8, 32, 128), "lime": (25, 100, 200),
                 "kernel_shap": (25, 100, 200)}


def _captum_class(method, forward, coalitions=None):
    """Captum's class of ``method``; with ``coalitions`` (n, F) it draws those."""
    from captum.attr import FeatureAblation, KernelShap, Lime

    if method == "occlusion":
        return FeatureAblation(forward)
    if coalitions is None:
        return Lime(forward) if method == "lime" else KernelShap(forward)

    def drawn(original, **kwargs):
        yield from (row[None] for row in coalitions.long())

    explainer = Lime(forward) if method == "lime" else KernelShap(forward)
    explainer.perturb_func = drawn  # Lime's and KernelShap's sampler, stored at construction
    return explainer


def _fastest(settings: dict, run) -> tuple:
    """The setting of ``settings`` whose ``run(setting)`` takes the least CPU time."""
    cost = {}
    for setting in settings:
        start = time.process_time()
        run(setting)
        cost[setting] = time.process_time() - start
    return min(cost, key=cost.get), cost


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic) if np.ptp(a) > 0 and np.ptp(b) > 0 else 1.0


class Text:
    """The fine-tuned classifier as the package and as Captum see it."""

    def __init__(self, checkpoint, n_texts):
        import transformers

        from interpretable import BertTextClassifier
        from interpretable.reproduce.bcos_text import split

        self.texts = split("rotten-tomatoes", None, n_texts, 0)[1]
        self.package = {precision: BertTextClassifier.from_pretrained(
            checkpoint, max_length=64, device="cpu", inference_precision=precision)
            for precision in ("float32", "bf16")}
        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(
            checkpoint, local_files_only=True).eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint,
                                                                    local_files_only=True)
        self.words = self.model.get_input_embeddings()

    def forward(self, embedded, mask):
        return self.model(inputs_embeds=embedded, attention_mask=mask).logits

    def encoded(self, text):
        """(embeddings (1, T, E), baseline, mask, target) of one text."""
        batch = self.tokenizer([text], truncation=True, max_length=64, return_tensors="pt")
        ids, mask = batch["input_ids"], batch["attention_mask"]
        with torch.no_grad():
            embedded = self.words(ids)
            special = (ids == self.tokenizer.cls_token_id) | (ids == self.tokenizer.sep_token_id)
            pad = self.words(torch.full_like(ids, self.tokenizer.pad_token_id))
            baseline = torch.where(special[..., None], embedded, pad)
            target = int(self.forward(embedded, mask).argmax())
        return embedded, baseline, mask, target

    def captum(self, method, text, per_eval, coalitions=None):
        embedded, baseline, mask, target = self.encoded(text)
        features = torch.arange(embedded.shape[1])[None, :, None].expand_as(embedded)
        options = {} if method == "occlusion" else {"n_samples": N_SAMPLES}
        if coalitions is not None:
            coalitions = coalitions(embedded.shape[1])
        with torch.no_grad():
            return _captum_class(method, self.forward, coalitions).attribute(
                embedded, baselines=baseline, target=target, additional_forward_args=(mask,),
                feature_mask=features, perturbations_per_eval=per_eval, **options)[0, :, 0]

    def explain(self, method, texts, precision="float32", **options):
        options = options or ({} if method == "occlusion" else {"n_samples": N_SAMPLES})
        return self.package[precision].explain(texts, method=method, baseline="pad", **options)


class Images:
    """A torchvision ResNet-18 as ``ImageClassifier`` and as Captum sees it."""

    WINDOW = 8

    def __init__(self, n_images):
        from _real_vision import real_vision

        from interpretable import ImageClassifier
        from interpretable.datasets import make_textured_digits

        torchvision, _ = real_vision()
        torch.manual_seed(0)
        network = torchvision.models.resnet18(num_classes=10).eval()
        self.images = make_textured_digits(n_samples=n_images, size=64, random_state=0).data
        self.package = {precision: ImageClassifier.from_pretrained(
            network, classes=list(range(10)), image_size=64, device="cpu",
            inference_precision=precision) for precision in ("float32", "bf16")}
        clf = self.package["float32"]
        self.model = clf.module_
        self.x = clf.encode(self.images).inputs["x"]
        black = np.zeros((1, *self.images.shape[1:]), np.float32)
        self.baseline = clf.encode(black).inputs["x"]
        with torch.no_grad():
            self.target = self.model(self.x).argmax(1)

    def captum(self, method, i, per_eval, coalitions=None):
        from captum.attr import Occlusion

        x, baseline = self.x[i:i + 1], self.baseline
        with torch.no_grad():
            if method == "occlusion":
                return Occlusion(self.model).attribute(
                    x, sliding_window_shapes=(3, self.WINDOW, self.WINDOW),
                    strides=(3, self.WINDOW, self.WINDOW), baselines=baseline,
                    target=int(self.target[i]), perturbations_per_eval=per_eval).mean(1)[0]
            from interpretable.attribution import patch_features

            features = patch_features(x, self.WINDOW).expand_as(x)
            if coalitions is not None:
                coalitions = coalitions(int(features.max()) + 1)
            return _captum_class(method, self.model, coalitions).attribute(
                x, baselines=baseline.expand_as(x), target=int(self.target[i]),
                feature_mask=features, n_samples=N_SAMPLES,
                perturbations_per_eval=per_eval)[0, 0]

    def explain(self, method, precision="float32"):
        options = {} if method == "occlusion" else {"n_samples": N_SAMPLES}
        return self.package[precision].explain(self.images, method=method,
                                               window=self.WINDOW, **options)


def _perturbation_entry(kind: str, data, method: str, n: int, rounds: int) -> tuple:
    """Time and check one of occlusion, LIME and Kernel SHAP of ``data`` (Text or Images):
    the record entry, the CPU seconds of each callable and the bf16 rank correlations."""
    from interpretable.attribution import draw_coalitions

    def captum_all(per_eval, count=n):
        return [data.captum(method, data.texts[i] if kind == "text" else i, per_eval)
                for i in range(count)]

    def explain(precision):
        if kind == "text":
            return data.explain(method, data.texts[:n], precision)
        return data.explain(method, precision)

    best, grid = _fastest(PER_EVAL_GRID[method], lambda p: captum_all(p, min(n, 4)))
    _, cpu = timed({"captum": lambda: captum_all(best),
                    "package_float32": lambda: explain("float32"),
                    "package_bf16": lambda: explain("bf16")}, rounds, warmup=0)
    ours, low = explain("float32").values, explain("bf16").values
    same = []
    for i in range(min(n, 8)):  # Captum on the package's coalitions: the same numbers
        reference = data.captum(method, data.texts[i] if kind == "text" else i, best,
                                lambda count: draw_coalitions(method, count, N_SAMPLES, 0))
        reference = reference.numpy()
        same.append(np.abs(np.asarray(ours[i]).reshape(reference.shape) - reference).max())
    rho = [_spearman(np.ravel(a), np.ravel(b)) for a, b in zip(ours, low, strict=True)]
    entry = {"captum_cpu_seconds": cpu["captum"], "captum_perturbations_per_eval": best,
             "captum_grid_cpu_seconds_4_samples": {str(k): v for k, v in grid.items()},
             "package_float32_cpu_seconds": cpu["package_float32"],
             "package_bf16_cpu_seconds": cpu["package_bf16"],
             "max_abs_difference_from_captum_same_coalitions": float(max(same)),
             "bf16_spearman_with_float32_median": float(np.median(rho)),
             "bf16_spearman_with_float32_min": float(np.min(rho))}
    return entry, cpu, rho


def perturbation_rows(kind: str, data, n: int, rounds: int, record: dict) -> list:
    """Time and check occlusion, LIME and Kernel SHAP of ``data`` (Text or Images)."""
    rows = []
    for method in PERTURBATION:
        entry, cpu, rho = _perturbation_entry(kind, data, method, n, rounds)
        record[f"{kind}_{method}"] = entry
        print(kind, method, entry, flush=True)
        rows += [target(f"{kind} {method}: Captum's CPU time over the package's (float32)",
                        cpu["captum"] / cpu["package_float32"], 2),
                 target(f"{kind} {method}: Captum's CPU time over the package's "
                        f"(inference_precision='bf16', rank correlation "
                        f"{np.median(rho):.3f} median)", cpu["captum"] / cpu["package_bf16"], 2)]
    return rows


def integrated_gradient_rows(data: Text, checkpoint, n: int, record: dict) -> list:
    from bench_explain_ig import captum_explainer

    texts = data.texts[:n]
    explain = captum_explainer(checkpoint, n_steps=50)

    def captum(batch_texts, internal):
        return explain(batch_texts, internal)[1].double().numpy()

    def clock(function):
        start = time.process_time()
        out = function()
        return out, time.process_time() - start

    per_text, per_text_cpu = clock(lambda: np.concatenate([captum([t], None) for t in texts]))
    tolerance = float(np.median(per_text))
    internal, grid = _fastest((None, 400, 100), lambda b: captum(texts[:32], b))
    batched, batched_cpu = clock(lambda: np.concatenate(
        [captum(texts[i:i + 32], internal) for i in range(0, len(texts), 32)]))
    clf = data.package["float32"]

    def package(**options):
        explanation = clf.explain(texts, method="integrated_gradients", baseline="pad",
                                  **options)
        error = np.abs([v.sum() for v in explanation.values] + explanation.bias
                       - explanation.logit)
        return error, explanation

    (fixed, _), fixed_cpu = clock(lambda: package(n_steps=50))
    (auto, explanation), auto_cpu = clock(lambda: package(n_steps="auto", tolerance=tolerance))
    runs = {"captum_per_text": (per_text, per_text_cpu), "captum_batched": (batched, batched_cpu),
            "package_50_steps": (fixed, fixed_cpu), "package_auto": (auto, auto_cpu)}
    entry = {name: {"cpu_seconds": cpu, "completeness_error_median": float(np.median(errors)),
                    "completeness_error_p95": float(np.percentile(errors, 95))}
             for name, (errors, cpu) in runs.items()}
    entry["tolerance"] = tolerance
    entry["captum_batched_internal_batch_size"] = internal
    entry["captum_batched_grid_cpu_seconds_32_texts"] = {str(k): v for k, v in grid.items()}
    entry["package_auto_steps_mean"] = float(explanation.n_steps.mean())
    entry["package_auto_steps_counts"] = {str(int(k)): int(c) for k, c in zip(
        *np.unique(explanation.n_steps, return_counts=True), strict=True)}
    record["text_integrated_gradients"] = entry
    print("integrated gradients", entry, flush=True)
    return [target("IG auto: Captum per text's CPU time over the package's",
                   per_text_cpu / auto_cpu, 5),
            target("IG auto: Captum batched's CPU time over the package's",
                   batched_cpu / auto_cpu, 2),
            target("IG auto: completeness error median over Captum per text's",
                   np.median(auto) / np.median(per_text), 1, at_most=True),
            target("IG auto: completeness error 95th percentile over Captum per text's",
                   np.percentile(auto, 95) / np.percentile(per_text, 95), 1, at_most=True),
            target("IG 50 steps: Captum per text's CPU time over the package's",
                   per_text_cpu / fixed_cpu, 1)]


def main(args):
    import captum

    torch.set_num_threads(1)
    record = run_record(captum=captum.__version__)
    record.update(texts=args.texts, ig_texts=args.ig_texts, images=args.images,
                  rounds=args.rounds, n_samples=N_SAMPLES, checkpoint="DIR (see the docstring)")
    rows = []
    if not args.skip_text:
        text = Text(args.checkpoint, max(args.texts, args.ig_texts))
        rows += perturbation_rows("text", text, args.texts, args.rounds, record)
        rows += integrated_gradient_rows(text, args.checkpoint, args.ig_texts, record)
    if args.images:
        rows += perturbation_rows("image", Images(args.images), args.images, args.rounds,
                                  record)
    record["targets"] = rows
    path = RESULTS / "bench_posthoc_captum.json"
    path.write_text(json.dumps(finish_record(record), indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--texts", type=int, default=40, help="occlusion, LIME, Kernel SHAP")
    parser.add_argument("--ig-texts", type=int, default=100)
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-text", action="store_true")
    main(parser.parse_args())
