"""The estimators, one subpackage per model family over what they share (:mod:`.core`): the
word-token text classifiers (:mod:`.text`), SEAT (:mod:`.seat`), the transformer text
classifiers (:mod:`.transformer`), the image classifiers (:mod:`.vision`) and the sequence
models (:mod:`.sequence`); every family's explanation methods are in :mod:`.methods`. The
estimators themselves are imported from :mod:`interpretable`."""
