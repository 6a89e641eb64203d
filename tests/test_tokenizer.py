"""``word_tokenize`` must return exactly what nltk's ``NLTKWordTokenizer`` returns."""

import re

import pytest
from hypothesis import given, settings, strategies as st
from nltk.tokenize import NLTKWordTokenizer

from interpretable.datasets import load_rotten_tomatoes
from interpretable.preprocessing import TextEncoder, _tokenize as tokenize
from interpretable.preprocessing._tokenize import word_tokenize

NLTK = NLTKWordTokenizer()
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # TextEncoder's sentence split, restated


def nltk_encoder_tokens(text, lowercase=True):
    """What ``TextEncoder.tokenize`` returned when it called nltk directly."""
    text = text.lower() if lowercase else text
    return [tok for sentence in SENTENCE_END.split(text) for tok in NLTK.tokenize(sentence)]


ADVERSARIAL = [
    # quotes: ascii, doubled, backticks, unicode, guillemets, at the start, inside, at the end
    '"Hello," she said. "It\'s fine."', "''quoted'' and ``quoted``", "`single` ``", '"',
    "«Bonjour» „Guten“ ‘single’ “double”", "He said ‘hi’.", "rock ’n’ roll", "'tis 'twas 'T IS",
    "(\"parens\") [\"brackets\"] {''braces''} <\"angles\">", "'quoted' 're 'Ve 'm 'S 'D 'n",
    # contractions, upper and lower case, and their look-alikes
    "can't won't I'm you're they've we'll he'd She'S THEY'LL DON'T Y'ALL",
    "cannot CANNOT CanNot gonna GONNA gotta gimme lemme wanna d'ye more'n whaddya whatcha",
    "wanna. wanna\twanna\nwanna", "scannot cannoted gonnabe", "'t is 'tis' 'twasn't",
    # non-ASCII letters that match ASCII ones case-insensitively in ``re``
    "gİmme caNNOT 'tİs 'tıs 'twaſ 'twas", "KANNOT gıMME", "Ǆcannot cannotǄ",
    # brackets, ellipses, dashes, punctuation runs
    "a (b) [c] {d} <e> f", "Wait... what?! Really?? No!!!", "end.", "end..", "end....",
    "e.g. U.S.A. i.e.", "so -- what --- now", "figure‒en–em—bar―", "a.) b.] c.\" d.' e.'\"",
    "x.)    ", "He said “hi.”", "over.’ ", "fin.» ", "end. )", "end .\")  ", ". . .", "…",
    "yes…no", "3.14 and 1,000,000 and 1, 2 and a,b and :: ,, ;;",
    "price: $3.88 (roughly 3,36 euros) 50% off & more @home #1 *star*", "a:b a: b :",
    # URLs, e-mail, numbers, emoji, symbols
    "see https://example.com/a?b=c&d=e#frag, or mail me@x.org.", "v1.2.3-beta+build",
    "I ❤️ this 🎬🍿!", "👍🏽 great 😂😂😂", "½ ⅓ ¼ ① ²",
    # whitespace of every kind, including separators that str.split and regex \s see differently
    "tab\tnew\nline\r\nvt\x0bff\x0cnbsp\xa0ideo\u3000nel\x85end", "fs\x1cgs\x1drs\x1eus\x1fend",
    "can't\x1cbe", "it's\x1f", "  leading and trailing  ", "\u2028line\u2029para",
    # lone surrogates, control and zero-width characters, combining marks
    "bad \ud800 surrogate \udfff.", "zero\u200bwidth\u200djoiner", "e\u0301 cafe\u0301's",
    "\x00nul\x07bel", "\u180e mongolian",
    # nothing left after stripping
    "", " ", "\t\n", "\x1c", "\u3000",
    # inputs that backtrack in naive engines
    "." + " " * 2000 + "x", "a" + ".)" * 1000, "'" * 500 + "a", ",," * 500, "\"" * 300,
]


def test_rules_are_nltks_in_order():
    ours = [(p.pattern, repl) for p, repl, _ in (
        tokenize._STARTING_QUOTES_AND_PUNCTUATION + tokenize._ENDING_QUOTES + tokenize._CLITICS)]
    ours.insert(len(ours) - len(tokenize._CLITICS), (tokenize._WHITESPACE.pattern, " "))
    theirs = [(p.pattern, repl) for p, repl in (
        NLTK.STARTING_QUOTES + NLTK.PUNCTUATION + [NLTK.PARENS_BRACKETS, NLTK.DOUBLE_DASHES]
        + NLTK.ENDING_QUOTES)]
    assert ours == theirs
    assert [p.pattern for p in tokenize._CONTRACTIONS] == [
        p.pattern for p in NLTK.CONTRACTIONS2 + NLTK.CONTRACTIONS3]


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_adversarial_strings_match_nltk(text):
    assert word_tokenize(text) == NLTK.tokenize(text)
    assert word_tokenize(text.lower()) == NLTK.tokenize(text.lower())
    assert word_tokenize(text.upper()) == NLTK.tokenize(text.upper())


@pytest.mark.slow
def test_rotten_tomatoes_corpus_matches_nltk():
    texts = load_rotten_tomatoes().data
    for lowercase in (True, False):
        encoder = TextEncoder(lowercase=lowercase)
        mismatches = [t for t in texts if encoder.tokenize(t) != nltk_encoder_tokens(t, lowercase)]
        assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[0]!r}"


# fragments that switch the rules on, glued together in random order
FRAGMENTS = st.sampled_from([
    "a", "X", "can", "not", "gon", "na", "wan", "t", "is", "was", "d", "ye", "more", "n", "İ",
    "ı", "ſ", "'", "''", '"', "`", "``", "«", "»", "“", "”", "‘", "’", "„", "'s", "'LL", "n't",
    "N'T", "'re", "'m", ".", "..", "...", ",", ":", ";", "?", "!", "*", "$", "%", "&", "@", "#",
    "(", ")", "[", "]", "{", "}", "<", ">", "-", "--", "\u2013", "\u2014", "1", "9", "٣",
    " ", "  ", "\t", "\n", "\x1c", "\xa0", "\u3000", "\x85", "😂", "\ud800",
])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(FRAGMENTS, max_size=20).map("".join), st.text(max_size=40)))
def test_property_matches_nltk(text):
    assert word_tokenize(text) == NLTK.tokenize(text)
    assert TextEncoder().tokenize(text) == nltk_encoder_tokens(text)
