"""attribution"""
from .heads import HeadContributions, head_contributions  # noqa: E402,F401
