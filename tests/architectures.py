"""Tiny ``transformers`` sequence classifiers of architectures the package does not convert,
built offline for tests (as :mod:`families` builds the BERT lineage's).

``tiny_classifier(folder, architecture)`` writes what a fine-tuned checkpoint holds: a random
``...ForSequenceClassification`` (``config.json`` and ``model.safetensors``, saved by
``transformers``) and its tokenizer, a ``tokenizers`` model trained here on
:data:`families.CORPUS` and saved as a ``PreTrainedTokenizerFast`` (``AutoTokenizer`` reads it
back as it reads the real ones):

============  ====================================  ===============  =====================
architecture  tokenizer                             framing, pads    model (pad id)
============  ====================================  ===============  =====================
gpt2          byte-level BPE                        none, right      decoder (eos)
llama         SentencePiece BPE (Llama-2's          ``<s>`` before,  decoder (none: the
              normaliser, no pre-tokenizer)         left             config names no pad)
qwen2         byte-level BPE                        none, left       decoder (eos)
deberta-v2    SentencePiece Unigram (Metaspace)     [CLS] [SEP]      relative positions
modernbert    byte-level BPE                        [CLS] [SEP]      rotary, local attention
albert        WordPiece                             [CLS] [SEP]      shared layers
xlnet         SentencePiece Unigram (Metaspace)     ``<sep> <cls>``  pools the last position
                                                    after, left      (left-padded)
============  ====================================  ===============  =====================

Every model has hidden size 16, 2 layers (1 for XLNet), 2 heads and :data:`MAX_POSITIONS`
positions; weights are drawn with ``initializer_range`` 0.2 (seeded), so that the explanation
methods see more than the near-constant outputs of the usual 0.02, and the padding token's
embedding is not zero (as in a trained checkpoint: ``transformers`` starts it at zero).
"""

from __future__ import annotations

import functools
from pathlib import Path

from families import CORPUS

ARCHITECTURES = ("gpt2", "llama", "qwen2", "deberta-v2", "modernbert", "albert", "xlnet")
#: the architectures whose head reads the last real token (decoders) or the last position
DECODERS = ("gpt2", "llama", "qwen2")
MAX_POSITIONS = 64
_SIZES = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
          "num_attention_heads": 2, "initializer_range": 0.2}


@functools.cache
def _trained(kind: str, special: tuple) -> str:
    """The ``tokenizers`` JSON of a tokenizer of ``kind`` (``"bytes"``: byte-level BPE,
    ``"spm-bpe"``: Llama-2's SentencePiece BPE, ``"unigram"``, ``"wordpiece"``) trained on
    :data:`CORPUS`, with the ``special`` tokens first."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if kind == "bytes":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=list(special),
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
    elif kind == "spm-bpe":  # merges learned within words, applied without pre-tokenizer
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
        trainer = trainers.BpeTrainer(vocab_size=250, special_tokens=list(special),
                                      show_progress=False)
    elif kind == "unigram":
        tokenizer = Tokenizer(models.Unigram())
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=list(special),
                                          unk_token=special[-1], show_progress=False)
    else:
        tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=200, special_tokens=list(special),
                                            show_progress=False)
    tokenizer.train_from_iterator(CORPUS, trainer)
    if kind == "spm-bpe":  # Llama-2's tokenizer.json: the normaliser marks the words
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                                     normalizers.Replace(" ", "▁")])
        tokenizer.pre_tokenizer = None
    return tokenizer.to_str()


def _fast(kind: str, special: tuple, prefix=(), suffix=(), padding_side="right", **tokens):
    """A ``PreTrainedTokenizerFast`` of a trained tokenizer that frames a text as ``prefix
    pieces suffix``."""
    import transformers
    from tokenizers import Tokenizer, processors

    backend = Tokenizer.from_str(_trained(kind, special))
    if prefix or suffix:
        ids = backend.get_vocab()
        backend.post_processor = processors.TemplateProcessing(
            single=" ".join([*prefix, "$A", *suffix]),
            special_tokens=[(token, ids[token]) for token in {*prefix, *suffix}])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend,
                                                padding_side=padding_side, **tokens)


def tiny_tokenizer(architecture: str):
    """The tiny tokenizer of ``architecture`` (one of :data:`ARCHITECTURES`)."""
    bert = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "unk_token": "[UNK]", "mask_token": "[MASK]"}
    if architecture in ("gpt2", "qwen2"):
        end = "<|endoftext|>"
        return _fast("bytes", (end,), eos_token=end, pad_token=end,
                     padding_side="right" if architecture == "gpt2" else "left")
    if architecture == "llama":
        return _fast("spm-bpe", ("<s>", "</s>", "<unk>"), prefix=("<s>",),
                     padding_side="left", bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    if architecture == "deberta-v2":
        return _fast("unigram", ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"),
                     prefix=("[CLS]",), suffix=("[SEP]",), **bert)
    if architecture == "modernbert":
        return _fast("bytes", ("[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"),
                     prefix=("[CLS]",), suffix=("[SEP]",), **bert)
    if architecture == "albert":
        return _fast("wordpiece", ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
                     prefix=("[CLS]",), suffix=("[SEP]",), **bert)
    if architecture == "xlnet":
        return _fast("unigram", ("<pad>", "<sep>", "<cls>", "<mask>", "<unk>"),
                     suffix=("<sep>", "<cls>"), padding_side="left", pad_token="<pad>",
                     sep_token="<sep>", cls_token="<cls>", mask_token="<mask>",
                     unk_token="<unk>")
    raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}.")


def tiny_config(architecture: str, tokenizer):
    """The ``transformers`` config of a tiny ``architecture`` classifier for ``tokenizer``."""
    import transformers

    ids = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
    if architecture == "gpt2":
        return transformers.GPT2Config(n_embd=16, n_layer=2, n_head=2,
                                       n_positions=MAX_POSITIONS, initializer_range=0.2,
                                       bos_token_id=tokenizer.eos_token_id,
                                       eos_token_id=tokenizer.eos_token_id, **ids)
    decoder = {**_SIZES, "num_key_value_heads": 1, "max_position_embeddings": MAX_POSITIONS,
               "eos_token_id": tokenizer.eos_token_id}
    if architecture == "llama":
        return transformers.LlamaConfig(**decoder, bos_token_id=tokenizer.bos_token_id, **ids)
    if architecture == "qwen2":
        return transformers.Qwen2Config(**decoder, **ids)
    encoder = {**_SIZES, "max_position_embeddings": MAX_POSITIONS, **ids}
    if architecture == "deberta-v2":
        return transformers.DebertaV2Config(**encoder, relative_attention=True,
                                            position_buckets=16, pos_att_type=["p2c", "c2p"],
                                            position_biased_input=False, type_vocab_size=0)
    if architecture == "modernbert":
        return transformers.ModernBertConfig(**encoder, cls_token_id=tokenizer.cls_token_id,
                                             sep_token_id=tokenizer.sep_token_id,
                                             bos_token_id=tokenizer.cls_token_id,
                                             eos_token_id=tokenizer.sep_token_id,
                                             global_attn_every_n_layers=2, local_attention=8)
    if architecture == "albert":
        return transformers.AlbertConfig(**encoder, embedding_size=8)
    return transformers.XLNetConfig(d_model=16, n_layer=1, n_head=2, d_inner=32,
                                    initializer_range=0.2, **ids)


def tiny_classifier(folder, architecture: str, seed: int = 0, labels=("neg", "pos"),
                    head: bool = True, **fields) -> Path:
    """Write a tiny random ``architecture`` sequence classifier and its tokenizer.

    Parameters
    ----------
    folder : str or path
        Where to write (created if missing), e.g. pytest's ``tmp_path``.
    architecture : str
        One of :data:`ARCHITECTURES`.
    seed : int, default=0
        Seeds the random weights.
    labels : sequence of str, default=("neg", "pos")
        The ``id2label`` names, output by output.
    head : bool, default=True
        False: the base model alone (``AutoModel``), as a checkpoint before fine-tuning.
    **fields
        Further config fields (e.g. ``problem_type``).

    Returns
    -------
    Path
        ``folder``, read by ``AutoModelForSequenceClassification`` / ``AutoTokenizer``.
    """
    import torch
    import transformers

    folder = Path(folder)
    tokenizer = tiny_tokenizer(architecture)
    config = tiny_config(architecture, tokenizer)
    config.num_labels = len(labels)
    config.id2label = dict(enumerate(labels))
    config.label2id = {label: i for i, label in enumerate(labels)}
    for key, value in fields.items():
        setattr(config, key, value)
    auto = transformers.AutoModelForSequenceClassification if head else transformers.AutoModel
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = auto.from_config(config)
        table = model.get_input_embeddings().weight
        with torch.no_grad():  # trained, as in a real checkpoint (init zeroes padding_idx's)
            table[table.abs().sum(1) == 0] = torch.randn_like(table[:1]) * 0.2
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # "Writing model shards" on stderr
    try:
        model.save_pretrained(folder)
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    tokenizer.save_pretrained(folder)
    return folder
