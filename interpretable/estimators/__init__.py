"""The estimators, one subpackage per model family (:mod:`.text`, :mod:`.seat`, :mod:`.bert`,
:mod:`.vision`, :mod:`.sequence`) over what they share (:mod:`.core`); the explanation methods
of every family are listed in :mod:`.explainers`. The public classes are imported from
:mod:`interpretable`."""
