"""Module paths of the development snapshots before release 0.1.0, which pickles and user code
may name, resolved to where the code lives now.

The estimators moved into one subpackage per model family (``estimators/core``, ``text``,
``seat``, ``bert``, ``vision``, ``sequence``) and the B-cos layers into ``nn/bcos``. A pickle
records the module of its class (``interpretable.estimators.bcos_text.BcosTextClassifier``); so
that such pickles and imports keep working, :data:`MOVED_MODULES` maps every old module path to
the new one and :class:`MovedModuleFinder` (installed by ``import interpretable``) answers an
import of an old path with the new module itself: one module object under two names, no copy,
nothing re-executed. Old paths that are package names now (``interpretable.estimators.seat``,
``.vision``, ``.sequence``, ``interpretable.nn.bcos``) are the family packages, which export
what the old modules held.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

__all__ = ["MOVED_MODULES", "MovedModuleFinder", "install", "SHIMS_REMOVED_IN"]

#: the release that removes every shim for the development snapshots: this module's moved
#: paths, the estimators' ``_params_added`` / ``_fitted_added`` and ``_upgrade_config`` hand-ons,
#: the snapshot readers of the text encoders (see CHANGELOG.md, "Compatibility policy")
SHIMS_REMOVED_IN = "1.0.0"

#: old module path -> the module that holds its code now
MOVED_MODULES = {
    "interpretable.estimators.base": "interpretable.estimators.core.base",
    "interpretable.estimators.inference": "interpretable.estimators.core.inference",
    "interpretable.estimators.classifier": "interpretable.estimators.core.classifier",
    "interpretable.estimators.training": "interpretable.estimators.core.training",
    "interpretable.estimators.nets": "interpretable.estimators.core.nets",
    "interpretable.estimators.batch": "interpretable.estimators.core.encoded",
    "interpretable.estimators.persistence": "interpretable.estimators.core.persistence",
    "interpretable.estimators.model_folder": "interpretable.estimators.core.model_folder",
    "interpretable.estimators.state": "interpretable.estimators.core.state",
    "interpretable.estimators.explainers.base": "interpretable.estimators.core.explainer",
    "interpretable.estimators.explainers.loop": "interpretable.estimators.core.explain_loop",
    "interpretable.estimators.explainers.attributions":
        "interpretable.estimators.core.attributions",
    "interpretable.estimators.text_base": "interpretable.estimators.text.base",
    "interpretable.estimators.baselines": "interpretable.estimators.text.embedding_bag",
    "interpretable.estimators.attention_text": "interpretable.estimators.text.attention",
    "interpretable.estimators.diversity_lstm": "interpretable.estimators.text.diversity_lstm",
    "interpretable.estimators.explainers.text": "interpretable.estimators.text.explainers",
    "interpretable.estimators.seat_variants": "interpretable.estimators.seat.variants",
    "interpretable.estimators.seat_baselines": "interpretable.estimators.seat.baselines",
    "interpretable.estimators.seat_phases": "interpretable.estimators.seat.phases",
    "interpretable.estimators.bcos_text": "interpretable.estimators.bert.estimators",
    "interpretable.estimators.bert_checkpoint": "interpretable.estimators.bert.checkpoint",
    "interpretable.estimators.bert_callbacks": "interpretable.estimators.bert.callbacks",
    "interpretable.estimators.explainers.bcos_text": "interpretable.estimators.bert.explainers",
    "interpretable.estimators.vision_base": "interpretable.estimators.vision.base",
    "interpretable.estimators.bcos_vit_hooks": "interpretable.estimators.vision",
    "interpretable.estimators.vision.estimators": "interpretable.estimators.vision",
    "interpretable.estimators.pretrained": "interpretable.estimators.vision.pretrained",
    "interpretable.estimators.augmentation": "interpretable.estimators.vision.augmentation",
    "interpretable.estimators.explainers.image": "interpretable.estimators.vision.explainers",
    "interpretable.estimators.alphabet": "interpretable.estimators.sequence.alphabet",
    "interpretable.estimators.isan_maps": "interpretable.estimators.sequence.isan_maps",
    "interpretable.estimators.language_model": "interpretable.estimators.sequence.language_model",
    "interpretable.estimators.language_model_base":
        "interpretable.estimators.sequence.language_model_base",
    "interpretable.estimators.tagger": "interpretable.estimators.sequence.tagger",
    "interpretable.estimators.explainers.sequence": "interpretable.estimators.sequence.explainers",
    "interpretable.nn.bcos_kernels": "interpretable.nn.bcos.kernels",
    "interpretable.nn.bcos_vit": "interpretable.nn.bcos.holistic_vit",
    "interpretable.nn.bcos_v2": "interpretable.nn.bcos.simple_vit",
    "interpretable.nn.bcos_zoo": "interpretable.nn.bcos.zoo",
    "interpretable.nn.bcos_bert": "interpretable.nn.bcos.bert",
    "interpretable.nn.bcos_bert_layers": "interpretable.nn.bcos.bert_layers",
    "interpretable.nn.vit": "interpretable.nn.stem_vit",
    "interpretable.nn.conventional_vit": "interpretable.nn.library_vit",
}


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import hook: an old module path of :data:`MOVED_MODULES` loads as its new module."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        """The new module object itself (its ``__name__`` stays the new one)."""
        return importlib.import_module(MOVED_MODULES[spec.name])

    def exec_module(self, module):
        """Nothing to run: the new module is imported already. The import system has just
        given it the old path's spec; it gets its own back (``importlib.util.find_spec``,
        ``importlib.reload`` and doctest read it)."""
        if module.__spec__.loader is self:
            module.__spec__ = importlib.machinery.PathFinder.find_spec(
                module.__name__, sys.modules[module.__name__.rpartition(".")[0]].__path__)


def install() -> None:
    """Add the finder to :data:`sys.meta_path` once (after the standard finders, so that a
    path that exists as a file or package is never redirected)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
