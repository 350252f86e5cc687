"""The runner: what every study kind shares to compute trials and keep them (issue 27).

It knows nothing of rates, panels or metrics, and imports only :mod:`simdesign.core`.

* :mod:`simdesign.runner.study`: the study-kind interface, its registry and the generic trial runner;
* :mod:`simdesign.runner.execute`: the one chunk loop (plan, compute, save, lost-worker retries);
* :mod:`simdesign.runner.backends` and :mod:`simdesign.runner.forked_pool`: loky, fork, threading, Dask;
* :mod:`simdesign.runner.workers`: worker counts capped at the cores, workers that end with their coordinator;
* :mod:`simdesign.runner.stores`: a results directory claimed by one run at a time, its manifest and format,
  chunk files written atomically and read back with a one-line error when damaged;
* :mod:`simdesign.runner.limits`: the ceilings on sizes.
"""
