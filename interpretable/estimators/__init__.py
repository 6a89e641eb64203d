"""The estimators (imported lazily from :mod:`interpretable`)."""
