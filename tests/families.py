"""Tiny checkpoints of the BERT-lineage encoder families, built offline for tests.

``tiny_checkpoint(folder, family)`` writes what a downloaded checkpoint holds: a random model
of the family (``config.json`` and ``model.safetensors``, saved by ``transformers``) and its
tokenizer, trained here on :data:`CORPUS` and saved through the family's own tokenizer class
(so ``AutoTokenizer`` reads it back as it reads the real checkpoint):

============  =================================  =================  =======================
family        tokenizer                          start / end, pad   model
============  =================================  =================  =======================
bert          WordPiece, lower-cased             [CLS] [SEP], 0     hidden 16
distilbert    (the same)                         [CLS] [SEP], 0     dim 16
electra       (the same)                         [CLS] [SEP], 0     embedding 8, hidden 16
roberta       byte-level BPE                     <s> </s>, 1        hidden 16
xlm-roberta   SentencePiece Unigram (Metaspace)  <s> </s>, 1        hidden 16
============  =================================  =================  =======================

Every model has 2 layers, 2 heads, intermediate size 32, ``vocab_size`` the tokenizer's size
and :data:`MAX_POSITIONS` usable positions (RoBERTa-style models number positions from
``pad_token_id + 1``, so their ``max_position_embeddings`` is ``MAX_POSITIONS + 2``, as 514
is for 512 in the real ones). Tokenizers are trained once per process; models are seeded.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

FAMILIES = ("bert", "distilbert", "electra", "roberta", "xlm-roberta")
MAX_POSITIONS = 64
#: what the tiny tokenizers learn from: accents, punctuation, digits; no emoji (unknown to the
#: WordPiece and Unigram vocabularies, bytes to the byte-level BPE)
CORPUS = [
    "A naïve, wonderfully-made film! Not bad at all.",
    "The movie was great, and the plot was moving.",
    "An awful, dull and boring film; I left early.",
    "Don't stop believing: it's fine, isn't it?",
    "Café, résumé, über, façade and naïveté are borrowed words.",
    "She said “hello” and he said ‘goodbye’…",
    "Numbers like 1234, 3.14 and 1,000,000 appear too.",
    "The acting is superb; the script is patchy.",
    "What a waste of time!! Two hours I will never get back.",
    "A film about films, made by people who love films.",
    "It rained all day, so we watched three movies in a row.",
    "The soundtrack (by a famous composer) is beautiful.",
    "Great actors cannot save a bad script.",
    "I'd watch it again - twice, even.",
    "Très bien! Das ist gut. ¿Qué tal?",
    "Everything was fine until the last twenty minutes.",
    "The director's cut is longer, but is it better?",
    "Children will love it; their parents, maybe not.",
    "A moving story, well told and beautifully shot.",
    "Not the worst movie of the year, but close.",
    "The dialogue is sharp and often very funny.",
    "Some scenes drag; others fly by.",
    "An uneven, odd and sometimes brilliant debut.",
    "The special effects look cheap, the story is thin.",
    "We laughed, we cried, we left the cinema happy.",
    "This is the best film I have seen in years!",
    "Hello world, this is a test of the tokenizer.",
    "Is it art? Is it trash? Decide for yourself.",
    "The ending makes no sense at all.",
    "Well-made, well-acted and well worth seeing.",
]
#: the special tokens of each tokenizer model, in id order (``<mask>`` comes last in the
#: RoBERTa-style vocabularies, as in the real ones)
_SPECIAL = {"WordPiece": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
            "BPE": ["<s>", "<pad>", "</s>", "<unk>"], "Unigram": ["<s>", "<pad>", "</s>", "<unk>"]}
#: the ``tokenizers`` model of each family's tokenizer
TOKENIZER_MODEL = {"bert": "WordPiece", "distilbert": "WordPiece", "electra": "WordPiece",
                   "roberta": "BPE", "xlm-roberta": "Unigram"}


@functools.cache
def _trained(model: str) -> str:
    """The ``tokenizers`` JSON of a tokenizer of type ``model`` trained on :data:`CORPUS`."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    special = _SPECIAL[model]
    if model == "WordPiece":
        tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=200, special_tokens=special,
                                            show_progress=False)
    elif model == "BPE":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
    else:
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=special,
                                          unk_token="<unk>", show_progress=False)
    tokenizer.train_from_iterator(CORPUS, trainer)
    return tokenizer.to_str()


def tiny_tokenizer(family: str):
    """The tiny tokenizer of ``family`` (one of :data:`FAMILIES`), as the ``transformers``
    tokenizer class of the family."""
    import transformers

    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}.")
    model = json.loads(_trained(TOKENIZER_MODEL[family]))["model"]
    if family in ("bert", "distilbert", "electra"):
        classes = {"bert": transformers.BertTokenizer,
                   "distilbert": transformers.DistilBertTokenizer,
                   "electra": transformers.ElectraTokenizer}
        return classes[family](vocab=model["vocab"])
    if family == "roberta":
        vocab = {**model["vocab"], "<mask>": len(model["vocab"])}
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                  for m in model["merges"]]
        return transformers.RobertaTokenizer(vocab=vocab, merges=merges)
    vocab = [tuple(entry) for entry in model["vocab"]] + [("<mask>", 0.0)]
    return transformers.XLMRobertaTokenizer(vocab=vocab)


def tiny_config(family: str, tokenizer):
    """The ``transformers`` config of a tiny ``family`` model for ``tokenizer``."""
    import transformers

    ids = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
    if family == "distilbert":
        return transformers.DistilBertConfig(dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                             max_position_embeddings=MAX_POSITIONS, **ids)
    layers = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
              "intermediate_size": 32, **ids}
    if family == "bert":
        return transformers.BertConfig(max_position_embeddings=MAX_POSITIONS, **layers)
    if family == "electra":
        return transformers.ElectraConfig(embedding_size=8, max_position_embeddings=MAX_POSITIONS,
                                          **layers)
    config_class = {"roberta": transformers.RobertaConfig,
                    "xlm-roberta": transformers.XLMRobertaConfig}[family]
    return config_class(max_position_embeddings=MAX_POSITIONS + tokenizer.pad_token_id + 1,
                        type_vocab_size=1, bos_token_id=tokenizer.cls_token_id,
                        eos_token_id=tokenizer.sep_token_id, **layers)


def tiny_checkpoint(folder, family: str, seed: int = 0, labels=None) -> Path:
    """Write a tiny random ``family`` model and its tokenizer into ``folder``.

    Parameters
    ----------
    folder : str or path
        Where to write (created if missing), e.g. pytest's ``tmp_path``.
    family : {"bert", "distilbert", "electra", "roberta", "xlm-roberta"}
        The model family.
    seed : int, default=0
        Seeds the random weights.
    labels : list of str or None, default=None
        When given, a ``...ForSequenceClassification`` (as a fine-tuned checkpoint) whose
        ``id2label`` names these labels, output by output; None: the base model.

    Returns
    -------
    Path
        ``folder``: ``config.json``, ``model.safetensors`` and the tokenizer's files, read by
        ``transformers.AutoModel`` / ``AutoTokenizer.from_pretrained(folder)``.
    """
    import torch
    import transformers

    folder = Path(folder)
    tokenizer = tiny_tokenizer(family)
    config = tiny_config(family, tokenizer)
    auto = transformers.AutoModel
    if labels is not None:
        config.num_labels = len(labels)
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
        auto = transformers.AutoModelForSequenceClassification
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = auto.from_config(config)
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # "Writing model shards" on stderr
    try:
        model.save_pretrained(folder)
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    tokenizer.save_pretrained(folder)
    return folder
