"""WordPieceEncoder with the tokenizer of every BERT-lineage family (tiny ones, trained offline
in ``families.py``): the ids are the ``transformers`` tokenizer's, the offsets point into the
original text, words follow the pre-tokenizer, truncation, state and pickle round trips, and
hostile states or unsupported tokenizers are refused with a ValueError."""
import json
import pickle
import unicodedata

import numpy as np
import pytest

pytest.importorskip("transformers")

from families import FAMILIES, TOKENIZER_MODEL, tiny_checkpoint, tiny_tokenizer  # noqa: E402

from interpretable.preprocessing import (
    WordPieceEncoder,  # noqa: E402
    _wordpiece as wordpiece,  # noqa: E402
)

TEXT = "Café  naïve, well-made film!! 😀 ok"
TEXTS = [TEXT, "A lone \ud800 surrogate.", "  tab\tnewline\nand   repeated spaces  ",
         "Don't stop: it's 3.14 and 1,000!", "“Quoted” über façade…", "x", " "]
#: the words of TEXT: BERT's pre-tokenizer splits off single punctuation characters, the
#: byte-level one (GPT-2's pattern) punctuation runs, XLM-RoBERTa's splits at whitespace only
WORDS = {"WordPiece": ["Café", "naïve", ",", "well", "-", "made", "film", "!", "!", "😀", "ok"],
         "BPE": ["Café", "naïve", ",", "well", "-", "made", "film", "!!", "😀", "ok"],
         "Unigram": ["Café", "naïve,", "well-made", "film!!", "😀", "ok"]}


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    """(family, checkpoint folder, its transformers tokenizer, the fitted encoder)."""
    import transformers

    folder = tiny_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return request.param, folder, tokenizer, WordPieceEncoder(checkpoint=folder).fit()


def safe(text):
    """The text as the tokenizer reads it (a lone surrogate is U+FFFD)."""
    return wordpiece._SURROGATE.sub("\ufffd", text)


def assert_same_alignment(ours, theirs):
    assert ours.pieces == theirs.pieces and ours.dropped == theirs.dropped
    for field in ("offsets", "words", "spans"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))


# ---------------------------------------------------------------------------- fit
def test_fit_reads_the_start_end_and_pad_tokens_of_the_family(family):
    name, folder, tokenizer, encoder = family
    start, end = ("<s>", "</s>") if TOKENIZER_MODEL[name] != "WordPiece" else ("[CLS]", "[SEP]")
    assert (encoder.settings_["cls_token"], encoder.settings_["sep_token"]) == (start, end)
    assert encoder.pad_token_id_ == tokenizer.pad_token_id == (0 if start == "[CLS]" else 1)
    config = json.loads((folder / "config.json").read_text())
    assert len(encoder.index_to_token_) == config["vocab_size"] == len(tokenizer)
    assert encoder.index_to_token_ == tokenizer.convert_ids_to_tokens(range(len(tokenizer)))
    # a BERT tokenizer is stored as before (vocabulary and settings), the others as the JSON
    # of what tokenizes (no post-processor, decoder, truncation or padding)
    state = encoder.get_state()
    if TOKENIZER_MODEL[name] == "WordPiece":
        assert sorted(state) == ["params", "settings", "vocabulary"]
    else:
        assert sorted(state) == ["params", "settings", "tokenizer"]
        assert state["tokenizer"]["model"]["type"] == TOKENIZER_MODEL[name]
        assert all(state["tokenizer"][part] is None for part in wordpiece._UNUSED_PARTS)


def test_ids_are_the_transformers_tokenizers(family):
    _, _, tokenizer, encoder = family
    for text in TEXTS:
        ids, lengths = encoder.encode_tokens([encoder.tokenize(text)])
        assert ids[0].tolist() == tokenizer(safe(text))["input_ids"], text
        assert lengths.tolist() == [len(ids[0])]
    ids, _ = encoder.encode_tokens(encoder.tokenize_many(["a film", "a much longer film"]))
    assert ids[0, -1] == encoder.pad_token_id_ == tokenizer.pad_token_id


# ---------------------------------------------------------------------------- alignment
def bert_form(text):
    """Lower-cased, accents stripped: the tiny WordPiece tokenizer's normalisation."""
    return "".join(c for c in unicodedata.normalize("NFD", text.lower())
                   if unicodedata.category(c) != "Mn")


def shown_text(name, tokenizer, pieces):
    """The characters that consecutive pieces (sharing characters) show in the text."""
    if TOKENIZER_MODEL[name] == "WordPiece":
        return "".join(piece.removeprefix("##") for piece in pieces)
    if TOKENIZER_MODEL[name] == "BPE":  # bytes, written as characters; Ġ is a space
        return tokenizer.convert_tokens_to_string(pieces).strip()
    return "".join(pieces).replace("▁", "")


def test_offsets_are_the_shown_characters_of_the_original_text(family):
    name, _, tokenizer, encoder = family
    unknown = encoder.settings_["unk_token"]
    for text in TEXTS:
        aligned = encoder.align(text)
        assert aligned.offsets[[0, -1]].tolist() == [[-1, -1], [-1, -1]]
        inner = aligned.pieces[1:-1]
        spans = aligned.offsets[1:-1].tolist()
        # byte-level pieces of one character (an emoji, é) share its span: checked together
        groups, i = [], 0
        while i < len(inner):
            j = i + 1
            while j < len(inner) and spans[j][0] < spans[j - 1][1]:
                j += 1
            groups.append((inner[i:j], spans[i][0], max(e for _, e in spans[i:j])))
            i = j
        for pieces, start, end in groups:
            shown = safe(text)[start:end]
            assert shown == shown.strip(), (text, pieces)
            if pieces == [unknown]:
                assert end > start, text
            elif TOKENIZER_MODEL[name] == "WordPiece":
                assert bert_form(shown) == shown_text(name, tokenizer, pieces), (text, pieces)
            else:
                assert shown == shown_text(name, tokenizer, pieces), (text, pieces)


def test_words_follow_the_pre_tokenizer_and_space_markers_join_the_next_word(family):
    name, _, _, encoder = family
    aligned = encoder.align(TEXT)
    assert [TEXT[start:end] for start, end in aligned.spans] == WORDS[TOKENIZER_MODEL[name]]
    for text in TEXTS:
        aligned = encoder.align(text)
        words, offsets = aligned.words[1:-1], aligned.offsets[1:-1]
        assert aligned.words[[0, -1]].tolist() == [-1, -1]
        assert (np.diff(words) >= 0).all() and (words.size == 0 or words[0] == 0)
        assert len(aligned.spans) == (words.max() + 1 if words.size else 0)
        # every piece lies in its word, words do not overlap, no word is blank
        shown = offsets[:, 1] > offsets[:, 0]
        spans = aligned.spans[words]
        assert (spans[shown, 0] <= offsets[shown, 0]).all()
        assert (offsets[shown, 1] <= spans[shown, 1]).all()
        assert (aligned.spans[1:, 0] >= aligned.spans[:-1, 1]).all()
        if text.strip():
            assert all(text[start:end].strip() for start, end in aligned.spans), text


def test_truncation_keeps_the_first_pieces_and_counts_the_dropped(family):
    _, folder, _, encoder = family
    full = encoder.align(TEXT)
    cut = WordPieceEncoder(max_len=5, checkpoint=folder).fit().align(TEXT)
    assert cut.pieces == full.pieces[:4] + full.pieces[-1:]
    assert cut.dropped == len(full.pieces) - 5 > 0
    np.testing.assert_array_equal(cut.offsets[:4], full.offsets[:4])
    np.testing.assert_array_equal(cut.words[1:4], full.words[1:4])
    assert len(cut.spans) == cut.words.max() + 1
    last = cut.words[3]
    assert cut.spans[last, 1] == cut.offsets[3, 1] <= full.spans[last, 1]
    assert encoder.align(TEXT).dropped == 0


def test_encode_texts_gives_the_ids_of_the_aligned_pieces(family):
    """What fit reads (ids, lengths, pieces cut off) without aligning, as align gives them."""
    _, folder, _, encoder = family
    for fitted in (encoder, WordPieceEncoder(max_len=5, checkpoint=folder).fit()):
        aligned = [fitted.align(text) for text in TEXTS]
        ids, lengths, dropped = fitted.encode_texts(TEXTS)
        expected_ids, expected_lengths = fitted.encode_tokens([a.pieces for a in aligned])
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_array_equal(lengths, expected_lengths)
        assert dropped.tolist() == [a.dropped for a in aligned]
    assert dropped.any()  # max_len=5 cut some


# ---------------------------------------------------------------------------- persistence
def test_state_through_json_and_pickle_gives_the_same_encoder(family):
    _, _, _, encoder = family
    state = json.loads(json.dumps(encoder.get_state()))
    for copy in (WordPieceEncoder.from_state(state), pickle.loads(pickle.dumps(encoder))):
        assert copy.get_state() == encoder.get_state()
        assert copy.index_to_token_ == encoder.index_to_token_
        assert copy.pad_token_id_ == encoder.pad_token_id_
        for text in TEXTS:
            assert_same_alignment(copy.align(text), encoder.align(text))


def hostile_states(name, state):
    """(state, message) pairs: the family's state with one field broken."""
    settings = state["settings"]
    broken = [({**state, "settings": {**settings, "cls_token": 1}}, "'cls_token' has the wrong"),
              ({**state, "settings": {**settings, "sep_token": "<nope>"}},
               r"special tokens \['<nope>'\] are not in the vocabulary"),
              ({**state, "settings": {k: v for k, v in settings.items() if k != "pad_token"}},
               "settings must have the keys"),
              ({**state, "settings": None}, "settings must have the keys"),
              ({**state, "settings": {**settings, "prefix": [1]}}, "lists of at most 4 str"),
              ({**state, "settings": {**settings, "suffix": ["<nope>"]}},
               r"special tokens \['<nope>'\] are not in the vocabulary"),
              ({**state, "settings": {**settings, "prefix": settings["suffix"]}},
               "'cls_token' and 'sep_token' must be the first token of 'prefix'")]
    if TOKENIZER_MODEL[name] == "WordPiece":
        vocabulary = state["vocabulary"]
        return broken + [({**state, "vocabulary": [1, *vocabulary[1:]]}, "list of at most"),
                         ({**state, "vocabulary": vocabulary + vocabulary[:1]}, "repeated")]
    spec = state["tokenizer"]
    model = spec["model"]
    holed = {**model["vocab"], "ok": 10 ** 5} if TOKENIZER_MODEL[name] == "BPE" else None
    return broken + [
        ({**state, "tokenizer": "{}"}, "must be a dict with a 'model' dict"),
        ({**state, "tokenizer": {**spec, "model": {**model, "type": "WordLevel"}}},
         r"unsupported tokenizer model type 'WordLevel'; supported: .*WordPiece"),
        ({**state, "tokenizer": {**spec, "model": {**model, "vocab": "a b"}}},
         "vocabulary must be a list or dict"),
        ({**state, "tokenizer": {**spec, "added_tokens": 3}}, "added tokens must be a list"),
        ({**state, "tokenizer": {**spec, "pre_tokenizer": {"type": "Nope"}}}, "malformed"),
    ] + ([] if holed is None else [({**state, "tokenizer": {**spec, "model": {**model,
                                                                             "vocab": holed}}},
                                    "ids are not 0, ..., n - 1")])


def test_hostile_states_are_refused(family, monkeypatch):
    name, _, _, encoder = family
    state = json.loads(json.dumps(encoder.get_state()))
    for bad, match in hostile_states(name, state):
        with pytest.raises(ValueError, match=match):
            WordPieceEncoder.from_state(bad)
    monkeypatch.setattr(wordpiece, "_MAX_ENTRIES", 10)
    with pytest.raises(ValueError, match="at most 10"):
        WordPieceEncoder.from_state(state)


# ---------------------------------------------------------------------------- refused at fit
def test_a_tokenizer_without_tokenizers_backend_is_refused(tmp_path):
    from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "film"]))
    BertTokenizerLegacy(vocab_file=str(vocab)).save_pretrained(tmp_path / "slow")
    with pytest.raises(ValueError, match=r"BertTokenizerLegacy\) has no `tokenizers` backend; "
                                         "supported: .*WordPiece"):
        WordPieceEncoder(checkpoint=tmp_path / "slow").fit()


def test_an_unknown_model_type_is_refused(tmp_path):
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    words = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4},
                                       unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=words, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
        unk_token="[UNK]").save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="unsupported tokenizer model type 'WordLevel'"):
        WordPieceEncoder(checkpoint=tmp_path).fit()


def test_a_tokenizer_is_framed_as_it_frames_texts(tmp_path):
    """GPT-2-like (byte-level BPE without a post-processor): the pieces alone, no start or end
    token the model never saw; more than 4 special tokens around a text are refused."""
    import transformers
    from tokenizers import processors

    backend = tiny_tokenizer("roberta").backend_tokenizer
    backend.post_processor = None
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>").save_pretrained(
        tmp_path / "bare")
    encoder = WordPieceEncoder(checkpoint=tmp_path / "bare").fit()
    settings = encoder.settings_
    assert (settings["prefix"], settings["suffix"]) == ([], [])
    assert (settings["cls_token"], settings["sep_token"]) == (None, None)
    pieces = encoder.align(TEXT)
    assert (pieces.words >= 0).all() and pieces.pieces == encoder.tokenize(TEXT)
    ids, lengths, _ = encoder.encode_texts([TEXT])
    assert ids[0, : lengths[0]].tolist() == backend.encode(TEXT).ids
    backend.post_processor = processors.TemplateProcessing(
        single="<s> <s> <s> <s> <s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>").save_pretrained(tmp_path / "long")
    encoder = WordPieceEncoder(checkpoint=tmp_path / "long")
    with pytest.raises(ValueError, match="between at most 4 special tokens"):
        encoder.fit()
    assert not hasattr(encoder, "index_to_token_")  # nothing is held from a refused tokenizer


# ---------------------------------------------------------------------------- the builder
def test_tiny_checkpoints_load_as_their_family(family):
    import torch
    import transformers

    name, folder, tokenizer, _ = family
    model = transformers.AutoModel.from_pretrained(str(folder))
    assert model.config.model_type == name
    assert model.config.vocab_size == len(tokenizer)
    ids = torch.tensor([tokenizer(TEXT)["input_ids"]])
    assert model(input_ids=ids).last_hidden_state.shape[-1] == 16
    if name == "electra":
        assert model.config.embedding_size == 8
    if TOKENIZER_MODEL[name] != "WordPiece":  # positions start after the padding id
        assert model.config.max_position_embeddings == 64 + tokenizer.pad_token_id + 1


def test_an_unknown_family_is_named(tmp_path):
    with pytest.raises(ValueError, match="family must be one of"):
        tiny_checkpoint(tmp_path, "gpt2")
