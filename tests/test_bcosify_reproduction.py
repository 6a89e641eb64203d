"""The reproduction of B-cosification (interpretable.reproduce.bcosify) end to end at a tiny
size: the structure of its results, not the numbers."""
import json

from interpretable.reproduce import bcos_text, bcosify as repro

TINY_BERT = {"vocab_size": 30522, "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
             "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
             "attention_probs_dropout_prob": 0.1}
MODELS = {"original_finetuned", "bcosified", "bcos_from_scratch"}


def test_reproduction_runs_on_a_tiny_setting(monkeypatch):
    monkeypatch.setattr(bcos_text, "BERT", {**bcos_text.BERT, "checkpoint": TINY_BERT,
                                            "max_length": 24})
    monkeypatch.setattr(repro, "minilm_config", lambda: TINY_BERT)
    results = repro.run(quick=True, n_train=48, pretrain_epochs=1, epochs=1, n_grids=2,
                        n_test=64, text_train=32, text_test=16)
    vision, text = results["vision"], results["text"]
    assert set(vision["models"]) == set(text["models"]) == MODELS
    assert vision["conversion_max_logit_error"] < 1e-4
    for name, row in vision["models"].items():
        methods = repro.POST_HOC if name == "original_finetuned" else ("inherent",)
        assert set(row["localisation"]) <= set(methods)
        assert 0 <= row["accuracy"] <= 1 and row["train_seconds"] >= 0
    assert "max_completeness_error" in vision["models"]["bcosified"]
    assert text["n_train"] == 32 and text["n_test"] == 16
    assert all(set(row) == {"accuracy", "train_seconds"} for row in text["models"].values())
    assert "vision/bcosified" in repro.table(results)
    json.dumps(results, default=float)
    assert results["command"] == ("python -m interpretable reproduce bcosify --quick "
                                  "--n-train 48 --pretrain-epochs 1 --epochs 1 --n-grids 2 "
                                  "--text-train 32")
    assert repro.results_suffix({"part": "text"}) == "-text"
    assert repro.results_suffix({"part": "all"}) == ""
