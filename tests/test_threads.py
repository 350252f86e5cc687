"""simdesign.core.threads: one BLAS thread inside single_threaded, nested blocks cheap and harmless."""
from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from simdesign.core.threads import single_threaded
from simdesign.stats.contrasts import t_upper_tail


def _threads() -> list:
    return [pool["num_threads"] for pool in threadpool_info()]


def test_nested_blocks_keep_one_thread_and_the_outer_block_restores_the_limits():
    with threadpool_limits(limits=2):
        before = _threads()
        with single_threaded():
            assert all(n == 1 for n in _threads())
            with single_threaded():  # nested: nothing set, nothing restored
                assert all(n == 1 for n in _threads())
                with single_threaded():
                    assert all(n == 1 for n in _threads())
            assert all(n == 1 for n in _threads())
        assert _threads() == before


def test_t_upper_tail_equals_scipys_t_sf():
    """contrasts.t_upper_tail (wald_contrasts' t p-values) gives scipy.stats.t.sf's numbers exactly, at the
    edges too (df not positive or NaN, x infinite or NaN)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    x = np.abs(rng.standard_normal(20000)) * rng.choice([0.01, 1.0, 5.0, 30.0], 20000)
    df = np.exp(rng.uniform(-3, 8, 20000))
    assert np.array_equal(t_upper_tail(x, df), stats.t.sf(x, df))
    x = np.array([0.0, 1.0, np.inf, np.nan, 2.0, 3.0, -np.inf, 1.0, 1.0, 1.0])
    df = np.array([3.0, 0.0, 5.0, 4.0, np.nan, -1.0, 3.0, np.inf, 1e300, 2.5])
    assert np.array_equal(t_upper_tail(x, df), stats.t.sf(x, df), equal_nan=True)
    assert np.array_equal(t_upper_tail(1.5, [3.0, 4.0]), stats.t.sf(1.5, [3.0, 4.0]))
