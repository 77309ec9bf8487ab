"""What the fuzz tests share: the seed from `EMBER_FUZZ_SEED` and a decorator
that feeds a test hypothesis' random generators with it."""

import os

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

SEED = os.environ.get("EMBER_FUZZ_SEED")


def fuzz_given(examples: int):
    """Run the decorated test on `examples` random generators: derandomized
    (the same cases every run) unless `EMBER_FUZZ_SEED` names a seed."""

    def wrap(test):
        test = settings(
            max_examples=examples,
            deadline=None,
            derandomize=SEED is None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )(given(st.randoms(use_true_random=False))(test))
        return seed(int(SEED))(test) if SEED is not None else test

    return wrap
